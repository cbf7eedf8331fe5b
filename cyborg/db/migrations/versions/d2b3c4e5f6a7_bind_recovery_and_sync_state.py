"""Bind recovery and pending Placement syncs.

ARQs remember which conductor started their bind and when
(``bind_conductor``, ``bind_started_at``), so a restarted conductor finds
the binds it left unfinished, and whether Nova was told of the result
(``nova_notified``), so the event is sent even after a crash. Hosts
remember that their last report is not yet in Placement
(``sync_pending``), so a periodic task can catch up without the agent.

Revision ID: d2b3c4e5f6a7
Revises: c0a1f2e3d4b5
"""

from alembic import op
import sqlalchemy as sa

revision = 'd2b3c4e5f6a7'
down_revision = 'c0a1f2e3d4b5'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('extended_accelerator_requests') as batch:
        batch.add_column(sa.Column('bind_conductor', sa.String(255),
                                   nullable=True))
        batch.add_column(sa.Column('bind_started_at', sa.DateTime,
                                   nullable=True))
        batch.add_column(sa.Column('nova_notified', sa.Boolean,
                                   nullable=False,
                                   server_default=sa.false()))
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('sync_pending', sa.Boolean,
                                   nullable=False,
                                   server_default=sa.false()))
