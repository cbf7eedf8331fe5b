"""The nonces of the signed RPC messages the conductors took.

A signed message runs once among all the conductors, restarted ones
included: the conductor that takes it first inserts its nonce, and the
others find it there. A row goes once the message is too old to be
taken anyway.

Revision ID: b6e2d9f4a1c8
Revises: a7d5c3e1f9b2
"""

from alembic import op
import sqlalchemy as sa

revision = 'b6e2d9f4a1c8'
down_revision = 'a7d5c3e1f9b2'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'rpc_nonces',
        sa.Column('created_at', sa.DateTime),
        sa.Column('updated_at', sa.DateTime),
        sa.Column('nonce', sa.String(64), primary_key=True),
        sa.Column('expires_at', sa.DateTime, nullable=False),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('rpc_nonces_expires_at_idx', 'rpc_nonces',
                    ['expires_at'])
