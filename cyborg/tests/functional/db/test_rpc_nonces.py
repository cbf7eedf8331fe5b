"""The conductors' RPC nonces (``cyborg.db.rpc_nonces``) on each real
database, made by the migrations: a nonce is taken once, whichever
conductor asks, two at once included; a row goes once its message is too
old; the table takes no disk flush where the database allows that."""

import concurrent.futures
import time
import uuid

import sqlalchemy as sa

from cyborg.common import context as cyborg_context
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db import rpc_nonces
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures


class _NonceTests:

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(cyborg_fixtures.Database(
            self, self.backend, schema='migrations'))
        self.ctx = cyborg_context.get_admin_context()

    def rows(self):
        with db_api.reader.using(self.ctx) as session:
            return session.execute(sa.select(sa.func.count()).select_from(
                models.RPCNonce)).scalar()

    def scalar(self, query):
        with self.db.engine.connect() as connection:
            return connection.execute(sa.text(query)).scalar()

    def test_a_nonce_is_taken_once(self):
        nonce = uuid.uuid4().hex
        expires = time.time() + 300
        self.assertTrue(rpc_nonces.claim(self.ctx, nonce, expires))
        self.assertFalse(rpc_nonces.claim(self.ctx, nonce, expires))
        # As another conductor's store would ask.
        other = rpc_nonces.Store(cyborg_context.get_admin_context())
        self.assertFalse(other.claim(nonce, expires))
        self.assertTrue(other.claim(uuid.uuid4().hex, expires))

    def test_two_conductors_at_once_one_wins(self):
        nonce = uuid.uuid4().hex
        stores = [rpc_nonces.Store(cyborg_context.get_admin_context())
                  for _ in range(8)]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            won = list(pool.map(lambda s: s.claim(nonce, time.time() + 60),
                                stores))
        self.assertEqual(1, won.count(True))

    def test_purge_drops_only_what_is_too_old(self):
        # The margin is past: too old to be taken anyway.
        old = time.time() - rpc_nonces.MARGIN - 60
        for _ in range(3):
            rpc_nonces.claim(self.ctx, uuid.uuid4().hex, old)
        young = uuid.uuid4().hex
        rpc_nonces.claim(self.ctx, young, time.time())
        self.assertEqual(4, self.rows())
        self.assertEqual(3, rpc_nonces.purge(self.ctx))
        self.assertEqual(0, rpc_nonces.purge(self.ctx))
        self.assertFalse(rpc_nonces.claim(self.ctx, young, time.time()))


class NoncesSQLiteTest(_NonceTests, base.TestCase):
    backend = 'sqlite'


class NoncesMySQLTest(_NonceTests, base.TestCase):
    backend = 'mysql'

    def test_kept_in_memory(self):
        self.assertEqual('MEMORY', self.scalar(
            "SELECT engine FROM information_schema.tables WHERE "
            "table_schema = DATABASE() AND table_name = 'rpc_nonces'"))


class NoncesPostgreSQLTest(_NonceTests, base.TestCase):
    backend = 'postgresql'

    def test_unlogged(self):
        self.assertEqual('u', self.scalar(
            "SELECT relpersistence FROM pg_class WHERE relname = "
            "'rpc_nonces'"))
