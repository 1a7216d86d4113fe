"""Seed 002's fair share keeps its data in the plugin database.

Issue 22 puts seed 002's fairness-aware sharing inside Nova. Its first
slice stores what the allocator reads and writes: each project's share
weight (``fairshare_shares``) and demand in cores (``fairshare_demand``);
the allocations of each allocator run (``fairshare_allocations``), under a
generation that ``fairshare_generations`` describes (policy and the node
templates it planned for, as JSON); each project's decayed usage per
platform in best-equivalent core-seconds (``fairshare_usage``); and the
measured task runs the affinities come from (``fairshare_runs``: solo runs
have ``corunners`` ''; otherwise the co-runners sorted and joined by '+').

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

#: Project and application names are compared exactly, case included.
NAME = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
)
CORUNNERS = sa.String(1024).with_variant(
    mysql.VARCHAR(1024, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
)

TABLES = (
    "fairshare_runs",
    "fairshare_usage",
    "fairshare_allocations",
    "fairshare_generations",
    "fairshare_demand",
    "fairshare_shares",
)


def upgrade() -> None:
    op.create_table(
        "fairshare_shares",
        sa.Column("project", NAME, nullable=False),
        sa.Column("weight", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint("weight > 0", name="ck_fairshare_shares_weight_positive"),
        sa.PrimaryKeyConstraint("project", name="pk_fairshare_shares"),
    )
    op.create_table(
        "fairshare_demand",
        sa.Column("project", NAME, nullable=False),
        sa.Column("cores", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint("cores >= 0", name="ck_fairshare_demand_cores_not_negative"),
        sa.PrimaryKeyConstraint("project", name="pk_fairshare_demand"),
    )
    op.create_table(
        "fairshare_generations",
        sa.Column("generation", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("policy", sa.String(255), nullable=False),
        sa.Column("templates", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("generation", name="pk_fairshare_generations"),
    )
    op.create_table(
        "fairshare_allocations",
        sa.Column("generation", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("project", NAME, nullable=False),
        sa.Column("platform", NAME, nullable=False),
        sa.Column("cores", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint(
            "generation", "project", "platform", name="pk_fairshare_allocations"
        ),
    )
    op.create_table(
        "fairshare_usage",
        sa.Column("project", NAME, nullable=False),
        sa.Column("platform", NAME, nullable=False),
        sa.Column("usage", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("project", "platform", name="pk_fairshare_usage"),
    )
    op.create_table(
        "fairshare_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("application", NAME, nullable=False),
        sa.Column("platform", NAME, nullable=False),
        sa.Column("runtime_s", sa.Double(), nullable=False),
        sa.Column("corunners", CORUNNERS, nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_fairshare_runs"),
    )
    op.create_index(
        "ix_fairshare_runs_application_platform",
        "fairshare_runs",
        ["application", "platform"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_fairshare_runs_application_platform", table_name="fairshare_runs")
    for table in TABLES:
        op.drop_table(table)
