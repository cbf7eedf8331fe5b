"""The name of a host's compute node provider.

Agents give the name of their host's compute node resource provider in
Placement (``[agent] resource_provider_name``) in their hello; the
conductor keeps it per host (``hosts.resource_provider_name``) and looks
the provider up by it. NULL, as for a host whose agent has not said hello
since the upgrade, means the provider is named after the hostname.

Revision ID: 22c1ca53d916
Revises: e4c5d6e7f8a9
"""

from alembic import op
import sqlalchemy as sa

revision = '22c1ca53d916'
down_revision = 'e4c5d6e7f8a9'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('resource_provider_name', sa.String(255),
                                   nullable=True))
