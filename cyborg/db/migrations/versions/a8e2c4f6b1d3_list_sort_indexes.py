"""Indexes for the lists' sort by creation time.

``GET /v2/deployables`` is newest first by default, and the ARQ list may
be sorted by ``created_at``: with an index on it (InnoDB appends the
primary key, the tie-breaker) a page of 40,000 deployables is read from
the index instead of sorting the table for every page.

Revision ID: a8e2c4f6b1d3
Revises: a7d4e2c9f1b6
"""

from alembic import op

revision = 'a8e2c4f6b1d3'
down_revision = 'a7d4e2c9f1b6'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('deployables_created_at_idx', 'deployables',
                    ['created_at'])
    op.create_index('extended_arqs_created_at_idx',
                    'extended_accelerator_requests', ['created_at'])
