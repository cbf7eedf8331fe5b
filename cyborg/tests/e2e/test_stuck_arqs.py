"""No ARQ outlives its server, with the real Nova.

Nova deletes a server that has no host yet in its API alone (its local
delete) and never deletes its ARQs. Here the timing proxy holds Nova's
bind of a new server's ARQ (nova-conductor has put the server in its
cell, without a host); the server is deleted meanwhile, then the bind
goes on: cyborg binds the ARQ, nova-compute finds the server gone, and
the ARQ is left Bound. The conductor's stuck-ARQ check (a grace and an
interval of seconds here, through the cloud's configuration) asks
Nova's servers API and releases it, with a warning in its log; the
device is then free: the next server gets the very same attach handle.

Run by ``tools/nova-e2e`` (``CYBORG_NOVA_E2E_VENV``); skipped without.
The module starts a cloud of its own, for its short check interval.
"""

import contextlib
import os
import sqlite3
import time

from cyborg.tests.e2e import base
from cyborg.tests.e2e import cloud as e2e

PROFILE = 'e2e-stuck'
FLAVOR = 'e2e.stuck'
GRACE = 2
INTERVAL = 3
# Released within the grace and one interval of the bind, and the time
# the check itself takes (one request to Nova, one transaction).
RELEASED_WITHIN = GRACE + INTERVAL + 30


class StuckARQsTest(base.E2ETestCase):

    profiles = {PROFILE: [{'resources:FPGA': '1',
                           'trait:CUSTOM_FAKE_DEVICE': 'required'}]}

    @classmethod
    def start_cloud(cls):
        cloud = e2e.NovaCloud(
            cls.venv, os.path.join(base.work_directory(), 'stuck-arqs'),
            cyborg_options={'conductor': {'stuck_arq_grace': GRACE,
                                          'stuck_arq_interval': INTERVAL}})
        cloud.setUp()
        return cloud

    @classmethod
    def flavor_profiles(cls):
        return {FLAVOR: PROFILE}

    def setUp(self):
        super().setUp()
        self.card = self.only_device()
        self.addCleanup(self.cloud.proxy.binds_gate.set)

    def bind_held(self, server):
        """Whether the proxy holds Nova's bind; AssertionError once the
        server failed instead."""
        if self.cloud.proxy.held_binds:
            return True
        shown = self.server(server)
        if shown['status'] == 'ERROR':
            raise AssertionError('server %s is ERROR: %s' % (
                server, shown.get('fault')))
        return False

    def test_a_server_deleted_before_it_got_a_host(self):
        proxy = self.cloud.proxy
        proxy.binds_gate.clear()
        server = self.create_server(self.flavors[FLAVOR],
                                    'deleted-while-scheduling')
        e2e.wait(lambda: self.bind_held(server), e2e.BOOT_TIMEOUT,
                 'Nova\'s bind of the ARQ of %s' % server)
        shown = self.server(server)
        self.assertIsNone(shown['OS-EXT-SRV-ATTR:host'], shown)
        # Deleted without a host: Nova's API deletes it alone.
        self.assertTrue(self.delete_server(server))
        proxy.binds_gate.set()
        bound_at = time.monotonic()
        # The bind goes on, and nobody deletes the ARQ: Nova's bug.
        [arq] = e2e.wait(lambda: [a for a in self.cloud.arqs(server)
                                  if a['state'] == 'Bound'],
                         e2e.BOOT_TIMEOUT, 'the ARQ of %s bound' % server)
        self.assertEqual(self.card, arq['device_rp_uuid'])
        # Nova removed the server's allocations itself.
        self.assertEqual({}, self.cloud.allocations(server))

        e2e.wait(lambda: not self.cloud.arqs(server), RELEASED_WITHIN,
                 'the ARQ of %s released' % server)
        released_after = time.monotonic() - bound_at
        self.assertEqual([], self.cloud.arqs())
        self.assertEqual({'FPGA': 0}, self.cloud.usages(self.card))
        logged = self.cloud.log_lines('cyborg-aio', arq['uuid'],
                                      'Nova no longer has its instance')
        self.assertEqual(1, len(logged), logged)
        print('ARQ released %.1f s after its bind' % released_after)

        # The device is free: the next server gets the same handle.
        again = self.create_server(self.flavors[FLAVOR], 'after-the-release')
        self.addCleanup(self.delete_server, again)
        self.wait_for(again, 'ACTIVE')
        [bound] = self.cloud.arqs(again)
        self.assertEqual(arq['attach_handle_info'],
                         bound['attach_handle_info'])
        # Nova shows it ACTIVE: a check confirms it and keeps its ARQ.
        e2e.wait(lambda: self.confirmed(bound['uuid']), RELEASED_WITHIN,
                 'the ARQ of %s confirmed' % again)
        self.assertEqual([bound], self.cloud.arqs(again))

    def confirmed(self, arq_uuid):
        """Whether the stuck-ARQ check confirmed the ARQ, as cyborg's
        database (the all-in-one's SQLite) says."""
        path = os.path.join(self.cloud.workdir, 'cyborg', 'cyborg.sqlite')
        with contextlib.closing(sqlite3.connect(path, timeout=30)) as db:
            return db.execute(
                'SELECT instance_confirmed FROM extended_accelerator_requests'
                ' WHERE uuid = ?', (arq_uuid,)).fetchone() == (1,)
