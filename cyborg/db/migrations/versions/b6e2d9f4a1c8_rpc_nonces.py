"""The nonces of the signed RPC messages the conductors took.

A signed message runs once among all the conductors, restarted ones
included: the conductor that takes it first inserts its nonce, and the
others find it there. A row goes once the message is too old to be
taken anyway.

A claim is on the path of every RPC message a conductor takes, and a
row matters for minutes only: the table is kept in memory on MySQL and
MariaDB (``ENGINE=MEMORY``, sized for millions of rows) and is not
written to the write-ahead log on PostgreSQL (``UNLOGGED``), so that a
claim costs a round trip and no disk flush. A database that restarts
(or a PostgreSQL that crashes) starts with no nonces.

Revision ID: b6e2d9f4a1c8
Revises: a7d5c3e1f9b2
"""

from alembic import op
import sqlalchemy as sa

revision = 'b6e2d9f4a1c8'
down_revision = 'a7d5c3e1f9b2'
branch_labels = None
depends_on = None

#: Bytes a MEMORY table may grow to, fixed when it is created.
MEMORY_TABLE_BYTES = 256 * 1024 * 1024


def upgrade():
    dialect = op.get_bind().dialect.name
    options = {}
    if dialect == 'mysql':
        op.execute('SET SESSION max_heap_table_size = %d'
                   % MEMORY_TABLE_BYTES)
        options = {'mysql_engine': 'MEMORY', 'mysql_charset': 'utf8mb4'}
    elif dialect == 'postgresql':
        options = {'prefixes': ['UNLOGGED']}
    op.create_table(
        'rpc_nonces',
        sa.Column('created_at', sa.DateTime),
        sa.Column('updated_at', sa.DateTime),
        sa.Column('nonce', sa.String(64), primary_key=True),
        sa.Column('expires_at', sa.DateTime, nullable=False),
        **options)
    # A B-tree (a MEMORY table's indexes are hashes by default): the purge
    # reads a range of it.
    op.create_index('rpc_nonces_expires_at_idx', 'rpc_nonces',
                    ['expires_at'], mysql_using='btree')
