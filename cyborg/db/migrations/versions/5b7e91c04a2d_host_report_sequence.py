"""Report sequence and Placement sync generation of a host.

``hosts.report_seq`` is the sequence of the newest report a host's agent
sent that the conductor applied: a report that arrives later with a lower
sequence (sent earlier, delivered late, say through another conductor) is
refused instead of replacing newer rows. ``hosts.synced_generation`` is
the ``report_generation`` Placement was last synced to, so that
``report_hash`` can describe the device rows and be written with them.

Hosts whose report was accepted before the upgrade (a hash recorded only
once Placement showed it) start as synced.

Revision ID: 5b7e91c04a2d
Revises: 22c1ca53d916
"""

from alembic import op
import sqlalchemy as sa

revision = '5b7e91c04a2d'
down_revision = '22c1ca53d916'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('synced_generation', sa.Integer,
                                   nullable=True))
        batch.add_column(sa.Column('report_seq', sa.BigInteger,
                                   nullable=True))
    hosts = sa.table('hosts', sa.column('report_hash', sa.String),
                     sa.column('report_generation', sa.Integer),
                     sa.column('synced_generation', sa.Integer))
    op.execute(hosts.update().where(hosts.c.report_hash.isnot(None)).values(
        synced_generation=hosts.c.report_generation))
