"""Profiles carry what seed 000's runtime model reads.

Seed 000 predicts an application's run time on a host type next to given
co-runners, from its run time and metrics measured alone on that host type
and the co-runners' metrics there, with one model per application family.
``app_profiles`` gains ``family`` (absent: the application is its own
family) and ``solo_runs``, a JSON mapping of host type to
``{"runtime": seconds, "metrics": {name: mean}}``.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

NAME = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
)


def upgrade() -> None:
    with op.batch_alter_table("app_profiles") as batch:
        batch.add_column(sa.Column("family", NAME, nullable=True))
        batch.add_column(sa.Column("solo_runs", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("app_profiles") as batch:
        batch.drop_column("solo_runs")
        batch.drop_column("family")
