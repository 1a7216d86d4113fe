"""Initial schema: application profiles, running applications, interference.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op
from oslo_db.sqlalchemy import types as oslo_types

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _timestamps() -> list[sa.Column]:
    return [
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        "app_profiles",
        *_timestamps(),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("app_class", sa.String(16), nullable=False),
        sa.Column("cache_score", sa.Double(), nullable=False),
        sa.Column("sllc_score", sa.Double(), nullable=True),
        sa.Column("dram_score", sa.Double(), nullable=True),
        sa.Column("net_score", sa.Double(), nullable=True),
        sa.Column("solo_runtime", sa.Double(), nullable=True),
        sa.Column("counters", oslo_types.JsonEncodedDict(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_app_profiles"),
        sa.UniqueConstraint("name", name="uq_app_profiles_name"),
    )
    op.create_table(
        "app_running",
        *_timestamps(),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("nodename", sa.String(255), nullable=True),
        sa.Column("app_name", sa.String(255), nullable=True),
        sa.Column("app_class", sa.String(16), nullable=False),
        sa.Column("cache_score", sa.Double(), nullable=False),
        sa.Column("request_id", sa.String(255), nullable=True),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_app_running"),
        sa.UniqueConstraint("instance_uuid", name="uq_app_running_instance_uuid"),
    )
    op.create_index("ix_app_running_host", "app_running", ["host"])
    op.create_index("ix_app_running_app_name", "app_running", ["app_name"])
    op.create_index("ix_app_running_request_id", "app_running", ["request_id"])
    op.create_table(
        "app_interferences",
        *_timestamps(),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("app_a", sa.String(255), nullable=False),
        sa.Column("app_b", sa.String(255), nullable=False),
        sa.Column("slowdown_a", sa.Double(), nullable=False),
        sa.Column("slowdown_b", sa.Double(), nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("measured_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_app_interferences"),
        sa.UniqueConstraint(
            "app_a", "app_b", "source", name="uq_app_interferences_app_a_app_b_source"
        ),
    )
