"""What the drivers of a host's agent saw, offered or not.

``host_hardware`` holds, per host, one row per PCI function an enabled
driver looked at, with its decision: offered, or not and why, and what
an operator changes to offer it. The agent sends the list with its
report (RPC 1.6); ``GET /v2/hardware`` (2.6) shows it. Hosts start with
none: their agents send it with their next report.

Revision ID: 7f3a9c1d2e4b
Revises: f1a2b3c4d5e6
"""

from alembic import op
import sqlalchemy as sa

revision = '7f3a9c1d2e4b'
down_revision = 'f1a2b3c4d5e6'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'host_hardware',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('host_id', sa.Integer,
                  sa.ForeignKey('hosts.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('address', sa.String(255), nullable=False),
        sa.Column('vendor_id', sa.String(16)),
        sa.Column('product_id', sa.String(16)),
        sa.Column('kernel_driver', sa.String(64)),
        sa.Column('driver', sa.String(255), nullable=False),
        sa.Column('offered', sa.Boolean, nullable=False),
        sa.Column('reason', sa.Text),
        sa.Column('action', sa.Text),
        sa.Column('setup_required', sa.Boolean, nullable=False),
        sa.Column('reboot_required', sa.Boolean, nullable=False),
        sa.Column('created_at', sa.DateTime),
        sa.Column('updated_at', sa.DateTime),
        sa.UniqueConstraint('host_id', 'driver', 'address',
                            name='uniq_host_hardware0host_id0driver0address'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
