"""Borrowed capacity taken back: loans, reclaims, and what a refusal needed.

Issue 45. A claim under fair share says whether its VMs are borrowed
beyond their project's entitlement or preemptible (``app_claims.loan``,
``loan_platform``, ``loan_over``); each such VM becomes a row of
``fairshare_loans`` when it is recorded. The agent's reclaims, from request
to outcome, are rows of ``fairshare_reclaims``. A refusal keeps the
topology level its request required, so that a reclaim frees cores inside
one domain of it.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

NAME = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
)


def upgrade() -> None:
    with op.batch_alter_table("app_claims") as batch:
        batch.add_column(sa.Column("loan", sa.String(16), nullable=True))
        batch.add_column(sa.Column("loan_platform", NAME, nullable=True))
        batch.add_column(sa.Column("loan_over", sa.Integer(), nullable=True))
    with op.batch_alter_table("fairshare_refusals") as batch:
        batch.add_column(sa.Column("topology_level", NAME, nullable=True))
    op.create_table(
        "fairshare_loans",
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("project", NAME, nullable=False),
        sa.Column("platform", NAME, nullable=False),
        sa.Column("cores", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("placed_at", sa.DateTime(), nullable=False),
        sa.Column("over_by", sa.Integer(), nullable=False),
        sa.Column("stopped", sa.Integer(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("instance_uuid", name="pk_fairshare_loans"),
    )
    op.create_index("ix_fairshare_loans_platform", "fairshare_loans", ["platform"])
    op.create_table(
        "fairshare_reclaims",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("project", NAME, nullable=False),
        sa.Column("platform", NAME, nullable=False),
        sa.Column("cores", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("beneficiary", NAME, nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("requested_at", sa.DateTime(), nullable=False),
        sa.Column("act_after", sa.DateTime(), nullable=False),
        sa.Column("acted_at", sa.DateTime(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("marked_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_fairshare_reclaims"),
    )
    op.create_index("ix_fairshare_reclaims_state", "fairshare_reclaims", ["state"])
    op.create_index("ix_fairshare_reclaims_instance_uuid", "fairshare_reclaims", ["instance_uuid"])


def downgrade() -> None:
    op.drop_table("fairshare_reclaims")
    op.drop_table("fairshare_loans")
    with op.batch_alter_table("fairshare_refusals") as batch:
        batch.drop_column("topology_level")
    with op.batch_alter_table("app_claims") as batch:
        batch.drop_column("loan_over")
        batch.drop_column("loan_platform")
        batch.drop_column("loan")
