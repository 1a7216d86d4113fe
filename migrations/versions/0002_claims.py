"""Claims: room promised to requests being scheduled, and their locks.

Schedulers planning at the same time must count each other's plans before
Nova has placed a VM. ``app_claims`` holds what each plan promised per host,
``app_locks`` the rows claiming locks, and ``app_running.claim_id`` ties a
placed VM to the claim it used.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "app_claims",
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("claim_id", sa.String(36), nullable=False),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("application_id", sa.String(255), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("nodename", sa.String(255), nullable=False),
        sa.Column("cell_uuid", sa.String(36), nullable=True),
        sa.Column("vms", sa.Integer(), nullable=False),
        sa.Column("spare", sa.Integer(), nullable=False),
        sa.Column("app_name", sa.String(255), nullable=True),
        sa.Column("app_class", sa.String(16), nullable=False),
        sa.Column("cache_score", sa.Double(), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_app_claims"),
        sa.UniqueConstraint(
            "claim_id", "host", "nodename", name="uq_app_claims_claim_id_host_nodename"
        ),
    )
    op.create_index("ix_app_claims_host", "app_claims", ["host"])
    op.create_index("ix_app_claims_application_id", "app_claims", ["application_id"])
    op.create_index("ix_app_claims_expires_at", "app_claims", ["expires_at"])
    op.create_table(
        "app_locks",
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_app_locks"),
    )
    with op.batch_alter_table("app_running") as batch:
        batch.add_column(sa.Column("claim_id", sa.String(36), nullable=True))
        batch.create_index("ix_app_running_claim_id", ["claim_id"])


def downgrade() -> None:
    with op.batch_alter_table("app_running") as batch:
        batch.drop_index("ix_app_running_claim_id")
        batch.drop_column("claim_id")
    op.drop_table("app_locks")
    op.drop_index("ix_app_claims_expires_at", table_name="app_claims")
    op.drop_index("ix_app_claims_application_id", table_name="app_claims")
    op.drop_index("ix_app_claims_host", table_name="app_claims")
    op.drop_table("app_claims")
