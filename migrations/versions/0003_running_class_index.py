"""Index ``app_running.app_class``.

Every request Nova schedules without HPC extra specs asks which hosts run
ExtremeHPC VMs: with this index that reads the few ExtremeHPC rows instead
of every VM the scheduler knows.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_app_running_app_class", "app_running", ["app_class"])


def downgrade() -> None:
    op.drop_index("ix_app_running_app_class", table_name="app_running")
