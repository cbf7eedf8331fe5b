"""When a host's last report was written.

``hosts.last_report_at`` is stamped by the UPDATE that records a report
(applied under the host's lock, or its new sequence recorded), so the
conductor's metrics can say how long ago each host last reported
(``cyborg_host_report_age_seconds``). NULL for every host at the upgrade:
when their last report came is not known, and a guess would show hosts
fresher than they are.

Revision ID: d8f1a6c3e9b4
Revises: d5e8f1a3b7c9
"""

from alembic import op
import sqlalchemy as sa

revision = 'd8f1a6c3e9b4'
down_revision = 'd5e8f1a3b7c9'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('last_report_at', sa.DateTime,
                                   nullable=True))
