"""What the conductor learnt from Nova about the instance of each ARQ.

``instance_confirmed``: Nova showed the instance past its build (any
status but ``BUILD`` or ``UNKNOWN``), so Nova's own delete paths release
the ARQ and the stuck-ARQ check never asks about it again.
``instance_checked_at``: when a conductor last took the ARQ's instance
to ask Nova about; two conductors never take the same one in one
interval. Rows of before are unconfirmed: each instance is asked about
once, a bounded number per run.

Revision ID: a7d4e2c9f1b6
Revises: 9c4e2f6a1b83
"""

from alembic import op
import sqlalchemy as sa

revision = 'a7d4e2c9f1b6'
down_revision = '9c4e2f6a1b83'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('extended_accelerator_requests') as batch:
        batch.add_column(sa.Column('instance_confirmed', sa.Boolean,
                                   nullable=False,
                                   server_default=sa.false()))
        batch.add_column(sa.Column('instance_checked_at', sa.DateTime,
                                   nullable=True))
        batch.create_index('extended_arqs_unconfirmed_idx',
                           ['instance_confirmed', 'instance_checked_at'])
