"""The name of each function in the hardware list.

``host_hardware.name`` holds the function's name from the PCI ID
database, as ``lspci`` gives it on the host (``NVIDIA Corporation
GH100[H100 SXM5 80GB]``), for functions offered or not; ``GET
/v2/hardware`` (2.6) shows it. Rows of before have none until their
host's agent sends its next hardware list.

Revision ID: 9c4e2f6a1b83
Revises: 3e8d1b2a9c47
"""

from alembic import op
import sqlalchemy as sa

revision = '9c4e2f6a1b83'
down_revision = '3e8d1b2a9c47'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('host_hardware') as batch:
        batch.add_column(sa.Column('name', sa.String(255)))
