"""The steady state at scale: indexes for the periodic checks, and the
conductors' leases.

Each periodic check of the conductor is one query that the new indexes
answer without reading every row: hosts up and not seen since a time
(``hosts_status_last_seen_at_idx``), hosts waiting for a Placement sync
(``hosts_sync_pending_idx``), ARQs left BindStarted
(``extended_arqs_state_idx``) or whose events Nova has not had
(``extended_arqs_nova_notified_idx``), accelerators still provisioning
(``accelerators_state_idx``). ``conductor_leases`` holds which conductor
runs those checks for all, until when; it starts empty, and the first
conductor to run a check takes the lease.

Revision ID: a7d5c3e1f9b2
Revises: 9c4e2f6a1b83
"""

from alembic import op
import sqlalchemy as sa

revision = 'a7d5c3e1f9b2'
down_revision = '9c4e2f6a1b83'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('hosts_status_last_seen_at_idx', 'hosts',
                    ['status', 'last_seen_at'])
    op.create_index('hosts_sync_pending_idx', 'hosts', ['sync_pending'])
    op.create_index('extended_arqs_state_idx',
                    'extended_accelerator_requests', ['state'])
    op.create_index('extended_arqs_nova_notified_idx',
                    'extended_accelerator_requests', ['nova_notified'])
    op.create_index('accelerators_state_idx', 'accelerators', ['state'])
    op.create_table(
        'conductor_leases',
        sa.Column('name', sa.String(64), primary_key=True),
        sa.Column('holder', sa.String(255), nullable=False),
        sa.Column('expires_at', sa.DateTime, nullable=False),
        sa.Column('created_at', sa.DateTime),
        sa.Column('updated_at', sa.DateTime),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
