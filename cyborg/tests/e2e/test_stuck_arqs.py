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
import tempfile
import time

import testtools

from cyborg.tests.e2e import cloud as e2e
from cyborg.tests.e2e import standins
from cyborg.tests import services

WORKDIR_ENV = 'CYBORG_NOVA_E2E_WORKDIR'
PROFILE = 'e2e-stuck'
GRACE = 2
INTERVAL = 3
# Released within the grace and one interval of the bind, and the time
# the check itself takes (one request to Nova, one transaction).
RELEASED_WITHIN = GRACE + INTERVAL + 30


class StuckARQsTest(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.venv = os.environ.get(e2e.VENV_ENV)
        if not cls.venv:
            return
        base = os.environ.get(WORKDIR_ENV) or tempfile.mkdtemp(
            prefix='cyborg-nova-e2e-')
        cls.cloud = e2e.NovaCloud(
            cls.venv, os.path.join(base, 'stuck-arqs'), cyborg_options={
                'conductor': {'stuck_arq_grace': GRACE,
                              'stuck_arq_interval': INTERVAL}})
        cls.cloud.setUp()
        try:
            cls.cloud.cyborg('POST', '/device_profiles', [{
                'name': PROFILE, 'groups': [{
                    'resources:FPGA': '1',
                    'trait:CUSTOM_FAKE_DEVICE': 'required'}]}], expect=201)
            flavor = cls.cloud.nova('POST', '/flavors', {'flavor': {
                'name': 'e2e.stuck', 'ram': 64, 'vcpus': 1, 'disk': 1}},
                admin=True, expect=200).json()['flavor']
            cls.cloud.nova('POST', '/flavors/%s/os-extra_specs' %
                           flavor['id'], {'extra_specs': {
                               'accel:device_profile': PROFILE}},
                           admin=True, expect=200)
            cls.flavor = flavor['id']
        except Exception:
            cls.cloud.cleanUp()
            raise

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, 'cloud', None) is not None:
            cls.cloud.cleanUp()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        if not self.venv:
            self.skipTest('%s is not set: run tools/nova-e2e' % e2e.VENV_ENV)
        for name in ('rabbit', 'mysql'):
            services.require(self, name)
        self.cloud.check_running()
        [self.card] = [p['uuid']
                       for p in self.cloud.provider_tree()['children']]
        self.addCleanup(self.cloud.proxy.binds_gate.set)

    def boot(self, name):
        return self.cloud.nova('POST', '/servers', {'server': {
            'name': name, 'imageRef': standins.IMAGE_ID,
            'flavorRef': self.flavor, 'networks': 'none'}},
            expect=202).json()['server']['id']

    def bind_held(self, server):
        """Whether the proxy holds Nova's bind; AssertionError once the
        server failed instead."""
        if self.cloud.proxy.held_binds:
            return True
        shown = self.cloud.nova('GET', '/servers/%s' % server, admin=True,
                                expect=200).json()['server']
        if shown['status'] == 'ERROR':
            raise AssertionError('server %s is ERROR: %s' % (
                server, shown.get('fault')))
        return False

    def gone(self, server):
        return self.cloud.nova('GET', '/servers/%s' % server,
                               admin=True).status_code == 404

    def delete(self, server):
        self.cloud.nova('DELETE', '/servers/%s' % server, expect=204)
        e2e.wait(lambda: self.gone(server), e2e.BOOT_TIMEOUT,
                 'server %s deleted' % server)

    def test_a_server_deleted_before_it_got_a_host(self):
        proxy = self.cloud.proxy
        proxy.binds_gate.clear()
        server = self.boot('deleted-while-scheduling')
        e2e.wait(lambda: self.bind_held(server), e2e.BOOT_TIMEOUT,
                 'Nova\'s bind of the ARQ of %s' % server)
        shown = self.cloud.nova('GET', '/servers/%s' % server,
                                admin=True, expect=200).json()['server']
        self.assertIsNone(shown['OS-EXT-SRV-ATTR:host'], shown)
        # Deleted without a host: Nova's API deletes it alone.
        self.delete(server)
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
        again = self.boot('after-the-release')
        self.addCleanup(self.delete, again)
        e2e.wait(lambda: self.cloud.nova(
            'GET', '/servers/%s' % again, expect=200).json()['server'][
                'status'] == 'ACTIVE', e2e.BOOT_TIMEOUT,
            'server %s ACTIVE' % again)
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
