"""Interference measured on the hosts: what each compute host's collector reports.

Issue 47. ``hpc-scheduler-collector`` reads every instance's last-level
cache occupancy, memory bandwidth and CPI on its host. Three tables:
``measured_hosts`` (a host's last report: its totals, LLC size, what it
can and cannot measure), ``measured_samples`` (the raw samples, kept
``measured_retention`` seconds) and ``measured_instances`` (each
instance's samples reduced to a decayed mean and a recent peak per
metric).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "measured_hosts",
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("reported_at", sa.DateTime(), nullable=False),
        sa.Column("llc_bytes", sa.BigInteger(), nullable=True),
        sa.Column("llc_occupancy", sa.Double(), nullable=True),
        sa.Column("mbm_total_bps", sa.Double(), nullable=True),
        sa.Column("mbm_local_bps", sa.Double(), nullable=True),
        sa.Column("measures", sa.String(255), nullable=False),
        sa.Column("problems", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("host", name="pk_measured_hosts"),
    )
    op.create_table(
        "measured_samples",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("taken_at", sa.DateTime(), nullable=False),
        sa.Column("llc_occupancy", sa.Double(), nullable=True),
        sa.Column("mbm_total_bps", sa.Double(), nullable=True),
        sa.Column("mbm_local_bps", sa.Double(), nullable=True),
        sa.Column("cpi", sa.Double(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_measured_samples"),
    )
    op.create_index(
        "ix_measured_samples_instance_uuid_taken_at",
        "measured_samples",
        ["instance_uuid", "taken_at"],
    )
    op.create_index("ix_measured_samples_host_taken_at", "measured_samples", ["host", "taken_at"])
    op.create_table(
        "measured_instances",
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("figures", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("instance_uuid", name="pk_measured_instances"),
    )
    op.create_index("ix_measured_instances_host", "measured_instances", ["host"])


def downgrade() -> None:
    op.drop_table("measured_instances")
    op.drop_table("measured_samples")
    op.drop_table("measured_hosts")
