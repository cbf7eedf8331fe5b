"""Syncs of several hosts that reach their inventories together set them
in one ``POST /reshaper``, against a real Placement; when that shared
request fails, each sync sets its own, and only the one at fault fails."""

import threading
import time
import uuid

import fixtures

from cyborg.agent import reporter as agent_reporter
from cyborg.common import context
from cyborg.conductor import placement_service
from cyborg.conductor import placement_sync
from cyborg.conductor import reporting
from cyborg.db import hosts as db_hosts
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional import test_reporting

DEVICES = 2


class ReshapeBatchTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self, 'sqlite'))
        self.placement = self.useFixture(
            placement_fixture.Placement(self.conf))
        self.ctx = context.get_admin_context()
        self.hosts = ['batch-%s-%d' % (uuid.uuid4().hex[:8], i)
                      for i in range(4)]
        for hostname in self.hosts:
            db_hosts.record_hello(self.ctx, hostname, hostname, '1', [])
            self.placement.create_compute_node(hostname)
        self.service = placement_service.PlacementService(self.conf)
        self.reporting = reporting.Reporting(self.conf, self.service)
        self.calls = []
        self.first_entered = threading.Event()
        self.release = threading.Event()
        self.addCleanup(self.release.set)
        real = placement_sync.placement.set_many_inventories

        def set_many_inventories(client, inventories):
            # Who asked for which providers, and the first request held
            # until the test releases it.
            self.calls.append(sorted(inventories))
            if len(self.calls) == 1:
                self.first_entered.set()
                self.assertTrue(self.release.wait(30))
            return real(client, inventories)
        self.useFixture(fixtures.MockPatchObject(
            placement_sync.placement, 'set_many_inventories',
            set_many_inventories))

    def devices(self, hostname, num=8):
        return [test_reporting.get_test_device(hostname, function=f,
                                               num=num)
                for f in range(DEVICES)]

    def providers(self, hostname):
        return sorted(placement_sync.provider_uuid(
            '%s_dev%d' % (hostname, f)) for f in range(DEVICES))

    def report_all(self, before_release=None):
        """Every host reports at once; the first inventories request is
        held until the others wait for the next one. Returns what each
        report was answered."""
        answers = {}

        def report(hostname):
            devices = self.devices(hostname)
            answers[hostname] = (
                agent_reporter.report_hash(devices),
                self.reporting.report(self.ctx, hostname, devices,
                                      agent_reporter.report_hash(devices)))
        first = threading.Thread(target=report, args=(self.hosts[0],))
        first.start()
        self.assertTrue(self.first_entered.wait(30))
        others = [threading.Thread(target=report, args=(hostname,))
                  for hostname in self.hosts[1:]]
        for thread in others:
            thread.start()
        pending = self.service.sync._reshapes._pending
        deadline = time.monotonic() + 30
        while len(pending) < len(others):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        if before_release is not None:
            before_release()
        self.release.set()
        for thread in [first] + others:
            thread.join(30)
        self.requests = self.placement.requests()
        return answers

    def assert_synced(self, answers):
        for hostname in self.hosts:
            digest, accepted = answers[hostname]
            self.assertEqual(digest, accepted, hostname)
            for rp_uuid in self.providers(hostname):
                _, body = self.placement.get(
                    '/resource_providers/%s/inventories' % rp_uuid)
                self.assertEqual(8, body['inventories']['FPGA']['total'])
                _, body = self.placement.get(
                    '/resource_providers/%s/traits' % rp_uuid)
                self.assertIn('CUSTOM_FAKE_DEVICE', body['traits'])

    def reshapes(self):
        return [path for method, path in self.requests
                if path.endswith('/reshaper')]

    def test_syncs_that_wait_together_share_one_request(self):
        answers = self.report_all()
        self.assert_synced(answers)
        others = sorted(p for hostname in self.hosts[1:]
                        for p in self.providers(hostname))
        self.assertEqual([self.providers(self.hosts[0]), others],
                         self.calls)
        self.assertEqual(2, len(self.reshapes()))

    def test_a_failed_shared_request_leaves_each_sync_its_own(self):
        # While the shared request is being formed, another writer moves
        # one provider of the second host on: the shared request fails
        # on its generation, the other hosts' syncs set their own, and
        # that host's sets its inventories provider by provider.
        victim = self.hosts[1]
        moved = self.providers(victim)[0]

        def move_on():
            client = self.service.client
            generation = placement_sync.placement.get_provider(
                client, moved)['generation']
            placement_sync.placement.set_traits(client, moved, generation,
                                                ['CUSTOM_FAKE_DEVICE'])
        answers = self.report_all(before_release=move_on)
        self.assert_synced(answers)
        # The held request, the shared one that failed, then each alone.
        self.assertEqual(
            sorted(self.providers(h) for h in self.hosts[1:]),
            sorted(self.calls[2:]))
        self.assertEqual(
            sorted(p for h in self.hosts[1:] for p in self.providers(h)),
            self.calls[1])
        # (The moved provider's is sent twice: its generation conflicts
        # once, and is read again.)
        inventories = sorted({path for method, path in self.requests
                              if method == 'PUT'
                              and path.endswith('/inventories')})
        self.assertEqual(
            ['/resource_providers/%s/inventories' % p
             for p in self.providers(victim)], inventories)
