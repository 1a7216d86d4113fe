"""Application names are compared case by case on every backend.

SQLite and PostgreSQL always told ``D1`` from ``d1``; MariaDB and MySQL, with
their default case-insensitive collations, took them for one name, so an
import holding both failed there alone and lookups ignored case. Names now
use the binary collation there too: one rule, exact names, everywhere.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

NAME_LENGTH = 255
#: (table, column, nullable) of every application name.
NAME_COLUMNS = (
    ("app_profiles", "name", False),
    ("app_interferences", "app_a", False),
    ("app_interferences", "app_b", False),
    ("app_running", "app_name", True),
    ("app_claims", "app_name", True),
)


def _mysql() -> bool:
    return op.get_bind().dialect.name in ("mysql", "mariadb")


def upgrade() -> None:
    if not _mysql():
        return
    for table, column, nullable in NAME_COLUMNS:
        op.alter_column(
            table,
            column,
            existing_type=sa.String(NAME_LENGTH),
            type_=mysql.VARCHAR(NAME_LENGTH, charset="utf8mb4", collation="utf8mb4_bin"),
            existing_nullable=nullable,
        )


def downgrade() -> None:
    if not _mysql():
        return
    for table, column, nullable in NAME_COLUMNS:
        op.alter_column(
            table,
            column,
            existing_type=mysql.VARCHAR(NAME_LENGTH, charset="utf8mb4", collation="utf8mb4_bin"),
            type_=sa.String(NAME_LENGTH),
            existing_nullable=nullable,
        )
