"""The agent's task record: the last run of each task of each agent.

Issue 43 moves the sweep and the fair-share allocator out of
nova-scheduler into ``hpc-scheduler-agent``. After each run of a task the
agent rewrites its row (task, agent ``host:pid``, when it started and
finished, its interval, the error if it failed); ``hpc-nova-scheduler
agent status`` reads them. Rows of agents gone for a day are pruned.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_tasks",
        sa.Column("task", sa.String(64), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=False),
        sa.Column("interval_s", sa.Double(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("task", "agent", name="pk_agent_tasks"),
    )


def downgrade() -> None:
    op.drop_table("agent_tasks")
