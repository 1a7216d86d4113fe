"""Fitted interference models, stored where every scheduler reads them.

A learned model (seed 001's forest, for one) is fitted once by an operator
and read by every nova-scheduler worker. ``fitted_models`` holds each under
a name: its kind, the skops bytes (never a pickle), the library versions
that made it, the report of its fit, and a generation that every new fit
under the name increments, so that schedulers notice it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

#: BLOB holds 64 KB on MariaDB; a forest of 22 trees is larger.
DATA = sa.LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "fitted_models",
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column(
            "name",
            sa.String(255).with_variant(
                mysql.VARCHAR(255, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
            ),
            nullable=False,
        ),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("data", DATA, nullable=False),
        sa.Column("versions", sa.Text(), nullable=False),
        sa.Column("report", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("name", name="pk_fitted_models"),
    )


def downgrade() -> None:
    op.drop_table("fitted_models")
