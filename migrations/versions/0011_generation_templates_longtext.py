"""Node templates of a fair-share generation larger than 64 KB on MariaDB.

``fairshare_generations.templates`` holds the allocator's node templates
as JSON, one entry per node: at 10,000 nodes that is megabytes, and
MariaDB's TEXT holds 64 KB, so ``fairshare allocate`` failed with "Data
too long for column 'templates'". LONGTEXT on MySQL and MariaDB;
PostgreSQL's and SQLite's TEXT have no such limit and are left as they are.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

MYSQL = ("mysql", "mariadb")


def _templates_as(new: sa.types.TypeEngine, old: sa.types.TypeEngine) -> None:
    if op.get_bind().dialect.name in MYSQL:
        op.alter_column(
            "fairshare_generations",
            "templates",
            type_=new,
            existing_type=old,
            existing_nullable=False,
        )


def upgrade() -> None:
    _templates_as(mysql.LONGTEXT(), sa.Text())


def downgrade() -> None:
    # Where a stored generation is larger than TEXT holds, MariaDB in its
    # default strict mode refuses the change rather than cut the JSON.
    _templates_as(sa.Text(), mysql.LONGTEXT())
