"""Fair share inside nova-scheduler: cores per VM, the allocator's lease, refusals.

Issue 22 enforces entitlements in the placement filter. A project's use of
a platform is the cores of its recorded VMs and live claims there, so
``app_running`` and ``app_claims`` gain ``cores`` (per VM; 0 for rows
written before, which the sweep fills in from the flavors). The allocator
runs in one scheduler worker at a time, the holder of the
``fairshare_lease`` row; the row also keeps when usage was last charged
and a digest of the allocator's last inputs, so that a change of demand or
usage triggers a run. ``fairshare_refusals`` counts requests refused for
their project's entitlement: Nova has no queue, so they are the demand
Nova shows beyond the running VMs. A declared demand may name the
application it is for (``fairshare_demand.application``), so that
entitlements follow its affinities before its first VM runs.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

NAME = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
)


def upgrade() -> None:
    for table in ("app_running", "app_claims"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("cores", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("fairshare_demand") as batch:
        batch.add_column(sa.Column("application", NAME, nullable=True))
    op.create_table(
        "fairshare_lease",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("holder", sa.String(255), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("accounted_at", sa.DateTime(), nullable=True),
        sa.Column("digest", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("name", name="pk_fairshare_lease"),
    )
    op.create_table(
        "fairshare_refusals",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("project", NAME, nullable=False),
        sa.Column("application", NAME, nullable=True),
        sa.Column("cores", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_fairshare_refusals"),
    )
    op.create_index(
        "ix_fairshare_refusals_created_at", "fairshare_refusals", ["created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_fairshare_refusals_created_at", table_name="fairshare_refusals")
    op.drop_table("fairshare_refusals")
    op.drop_table("fairshare_lease")
    with op.batch_alter_table("fairshare_demand") as batch:
        batch.drop_column("application")
    for table in ("app_claims", "app_running"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("cores")
