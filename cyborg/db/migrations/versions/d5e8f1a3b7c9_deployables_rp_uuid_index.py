"""An index on the provider of a deployable.

Every bind looks the deployable up by the provider Nova picked
(``deployables.rp_uuid``), as attach-instance does: without an index
that is a scan of every deployable of every host, on the path of every
server Nova boots (20,000 rows at 5,000 hosts of four cards).

Revision ID: d5e8f1a3b7c9
Revises: c3d9e7a1f5b2
"""

from alembic import op

revision = 'd5e8f1a3b7c9'
down_revision = 'c3d9e7a1f5b2'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('deployables_rp_uuid_idx', 'deployables', ['rp_uuid'])
