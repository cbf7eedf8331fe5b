"""Who the agent holding a host is.

Agents say who they are in their hello (``AgentHello.agent_id``,
``<machine>:<state file>/<pid>/<random>``); the conductor keeps the last accepted one
per host (``hosts.agent_id``) and refuses the hello of another agent for
the host while that one is alive. NULL, as for a host whose agent has
not said hello since the upgrade, holds nothing.

Revision ID: c3d9e7a1f5b2
Revises: b6e2d9f4a1c8
"""

from alembic import op
import sqlalchemy as sa

revision = 'c3d9e7a1f5b2'
down_revision = 'b6e2d9f4a1c8'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('agent_id', sa.String(255),
                                   nullable=True))
