"""One v1 accelerator per deployable.

Two operators creating accelerators at once must not both claim the same
deployable: ``accelerators.deployable_id`` becomes unique (the unique
index replaces the plain one the foreign key used).

Revision ID: e4c5d6e7f8a9
Revises: d2b3c4e5f6a7
"""

from alembic import op

revision = 'e4c5d6e7f8a9'
down_revision = 'd2b3c4e5f6a7'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('accelerators') as batch:
        batch.create_unique_constraint('uniq_accelerators0deployable_id',
                                       ['deployable_id'])
        batch.drop_index('accelerators_deployable_id_idx')
