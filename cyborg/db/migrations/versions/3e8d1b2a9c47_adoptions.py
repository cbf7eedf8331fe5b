"""Adoptions of upstream Cyborg databases.

``cyborg-dbsync adopt`` records each adoption (the upstream revision
read, the rows adopted per table, the rows left out) in ``adoptions``,
which ``cyborg-status upgrade check`` reads. Nothing to fill: a database
that was never adopted has no row. ``hosts.adopted`` marks the hosts an
adoption made until a report of our agent confirms them; hosts of before
were never adopted.

Revision ID: 3e8d1b2a9c47
Revises: 7f3a9c1d2e4b
"""

from alembic import op
import sqlalchemy as sa

revision = '3e8d1b2a9c47'
down_revision = '7f3a9c1d2e4b'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'adoptions',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('source_revision', sa.String(32), nullable=False),
        sa.Column('source_release', sa.String(64), nullable=False),
        sa.Column('counts', sa.Text, nullable=False),
        sa.Column('rejected', sa.Integer, nullable=False),
        sa.Column('created_at', sa.DateTime),
        sa.Column('updated_at', sa.DateTime),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('adopted', sa.Boolean, nullable=False,
                                   server_default=sa.false()))
