"""One v1 accelerator per accelerator unit, not per deployable.

A deployable offers ``num_accelerators`` units (the fake driver's card:
16); provisioning hands out one accelerator per unit. ``accelerators``
gets the ``unit`` it holds (0 to ``num_accelerators - 1``), and the
unique constraint moves from ``deployable_id`` to ``(deployable_id,
unit)``, so two operators creating accelerators at once still never take
the same unit. Existing accelerators held a whole deployable each; they
keep its unit 0.

Revision ID: f1a2b3c4d5e6
Revises: 5b7e91c04a2d
"""

from alembic import op
import sqlalchemy as sa

revision = 'f1a2b3c4d5e6'
down_revision = '5b7e91c04a2d'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('accelerators') as batch:
        batch.add_column(sa.Column('unit', sa.Integer, nullable=True))
    accelerators = sa.table('accelerators',
                            sa.column('deployable_id', sa.Integer),
                            sa.column('unit', sa.Integer))
    op.execute(accelerators.update().where(
        accelerators.c.deployable_id.isnot(None)).values(unit=0))
    with op.batch_alter_table('accelerators') as batch:
        # The new constraint first: on MySQL the foreign key of
        # deployable_id needs an index at every moment.
        batch.create_unique_constraint(
            'uniq_accelerators0deployable_id0unit', ['deployable_id', 'unit'])
        batch.drop_constraint('uniq_accelerators0deployable_id',
                              type_='unique')
