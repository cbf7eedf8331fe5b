"""The real Nova boots servers with accelerators from cyborg-aio.

Run by ``tools/nova-e2e``, which makes Nova's virtualenv and sets
``CYBORG_NOVA_E2E_VENV``; without it these tests are skipped. One cloud
(``cloud.NovaCloud``) serves the whole module; each test deletes its
servers and checks that their ARQs and allocations went with them, so
the fake card (16 FPGA functions) is whole again for the next test.

Figures (time to ACTIVE, latency of cyborg's calls as Nova sees them) go
to ``results.json`` in the work directory; ``tools/nova-e2e`` prints them.
"""

import concurrent.futures
import json
import statistics
import time

from cyborg.tests.e2e import base
from cyborg.tests.e2e import cloud as e2e
from cyborg.tests.e2e import standins

FPGA = {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}
PROFILES = {
    'e2e-one': [FPGA],
    'e2e-two-groups': [FPGA, {'resources:FPGA': '1'}],
    'e2e-fpga-2': [{'resources:FPGA': '2'}],
    'e2e-unknown-trait': [{'resources:FPGA': '1',
                           'trait:CUSTOM_E2E_NOBODY_HAS_IT': 'required'}],
}
# Flavor name: the profile its accel:device_profile names.
FLAVORS = dict({'e2e.' + name: name for name in PROFILES},
               **{'e2e.missing': 'e2e-no-such-profile'})
CARD_SIZE = 16


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class NovaBootsWithCyborgTest(base.E2ETestCase):

    profiles = PROFILES
    results = {}

    @classmethod
    def start_cloud(cls):
        cloud = e2e.NovaCloud(cls.venv, base.work_directory())
        cloud.setUp()
        return cloud

    @classmethod
    def flavor_profiles(cls):
        return FLAVORS

    def setUp(self):
        super().setUp()
        self.card = self.only_device()
        self.addCleanup(self._nothing_left_behind)
        self.addCleanup(self.report_strays)

    # -- helpers ----------------------------------------------------------

    def wait_for_all(self, servers, status):
        """Until every server of ``servers`` has ``status``; one list
        request a second, so that watching a burst does not load
        nova-api much."""
        def reached():
            shown = {s['id']: s for s in self.cloud.nova(
                'GET', '/servers/detail', expect=200).json()['servers']
                if s['id'] in servers}
            errors = {i: s.get('fault') for i, s in shown.items()
                      if s['status'] == 'ERROR'}
            if errors:
                raise AssertionError('servers in ERROR: %s' % errors)
            return len(shown) == len(servers) and all(
                s['status'] == status and not s.get('OS-EXT-STS:task_state')
                for s in shown.values())
        e2e.wait(reached, e2e.BOOT_TIMEOUT, '%d servers %s' % (
            len(servers), status), interval=1)

    def bound_arqs(self, server, count=1):
        arqs = self.cloud.arqs(server)
        self.assertEqual(count, len(arqs), arqs)
        for arq in arqs:
            self.assertEqual('Bound', arq['state'], arq)
            self.assertEqual(e2e.HOST, arq['hostname'])
            self.assertEqual(self.card, arq['device_rp_uuid'])
            self.assertEqual(server, arq['instance_uuid'])
        return arqs

    def fpga_allocated(self, server):
        allocations = self.cloud.allocations(server)
        return allocations.get(self.card, {}).get('resources', {}).get(
            'FPGA', 0)

    def _nothing_left_behind(self):
        """After each test: no ARQ, no FPGA in use, the card whole."""
        self.assertEqual([], [a for a in self.cloud.arqs()
                              if a['instance_uuid']])
        self.assertEqual({'FPGA': 0}, self.cloud.usages(self.card))

    # -- the tests --------------------------------------------------------

    def test_boot_and_server_lifecycle(self):
        started = time.monotonic()
        server = self.boot('e2e.e2e-one')
        self.results['one_boot_to_active_s'] = round(
            time.monotonic() - started, 2)
        self.assertEqual(1, self.fpga_allocated(server))
        [arq] = self.bound_arqs(server)
        self.assertEqual('e2e-one', arq['device_profile_name'])
        self.assertEqual('TEST_PCI', arq['attach_handle_type'])
        # Operations that keep the server on its host keep its ARQ.
        for body, status in (({'reboot': {'type': 'HARD'}}, 'ACTIVE'),
                             ({'os-stop': None}, 'SHUTOFF'),
                             ({'os-start': None}, 'ACTIVE'),
                             ({'rebuild': {'imageRef': standins.IMAGE_ID}},
                              'ACTIVE')):
            self.action(server, body)
            self.wait_for(server, status)
            self.assertEqual([arq], self.bound_arqs(server), body)
            self.assertEqual(1, self.fpga_allocated(server), body)
        # Nova refuses to suspend a server with accelerators.
        refused = self.action(server, {'suspend': None}, expect=None)
        self.assertIn(refused.status_code, (400, 409), refused.text)
        self.assertIn('accelerators', refused.text)
        self.assertEqual('ACTIVE', self.server(server)['status'])
        self.assertEqual([arq], self.bound_arqs(server))
        # Shelve-offload gives the device back; unshelve binds a new ARQ.
        self.action(server, {'shelve': None})
        self.wait_for(server, 'SHELVED')
        # Offloading on demand is an administrator's action.
        self.action(server, {'shelveOffload': None}, admin=True)
        self.wait_for(server, 'SHELVED_OFFLOADED')
        self.assertEqual([], self.cloud.arqs(server))
        self.assertEqual({}, self.cloud.allocations(server))
        self.action(server, {'unshelve': None})
        self.wait_for(server, 'ACTIVE')
        [again] = self.bound_arqs(server)
        self.assertNotEqual(arq['uuid'], again['uuid'])
        self.assertEqual(1, self.fpga_allocated(server))

    def test_two_groups_and_two_of_a_kind(self):
        two_groups = self.boot('e2e.e2e-two-groups')
        arqs = self.bound_arqs(two_groups, count=2)
        self.assertEqual([0, 1], sorted(a['device_profile_group_id']
                                        for a in arqs))
        self.assertEqual(2, self.fpga_allocated(two_groups))
        two_of_a_kind = self.boot('e2e.e2e-fpga-2')
        arqs = self.bound_arqs(two_of_a_kind, count=2)
        self.assertEqual({0}, {a['device_profile_group_id'] for a in arqs})
        self.assertEqual(2, self.fpga_allocated(two_of_a_kind))
        handles = [json.dumps(a['attach_handle_info'], sort_keys=True)
                   for a in self.cloud.arqs()]
        self.assertEqual(4, len(set(handles)))

    def test_missing_profile_and_unknown_trait(self):
        # Nova asks cyborg for the profile while it accepts the request.
        refused = self.cloud.nova('POST', '/servers', {'server': {
            'name': 'e2e-missing', 'imageRef': standins.IMAGE_ID,
            'flavorRef': self.flavors['e2e.missing'], 'networks': 'none'}})
        self.assertEqual(400, refused.status_code, refused.text)
        self.assertIn('e2e-no-such-profile', refused.text)
        # No device has the trait: Placement finds no host.
        self.no_valid_host('e2e.e2e-unknown-trait', 'e2e')

    def test_burst_fills_the_card_and_survives_a_cyborg_restart(self):
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(CARD_SIZE) as pool:
            servers = list(pool.map(
                lambda i: self.boot('e2e.e2e-one', name='burst-%d' % i,
                                    wait=False), range(CARD_SIZE)))
        self.wait_for_all(servers, 'ACTIVE')
        self.results['burst_16_to_active_s'] = round(
            time.monotonic() - started, 2)
        self._record_cyborg_latency(started)
        arqs = {s: self.bound_arqs(s)[0] for s in servers}
        handles = {json.dumps(a['attach_handle_info'], sort_keys=True)
                   for a in arqs.values()}
        self.assertEqual(CARD_SIZE, len(handles))
        self.assertEqual({'FPGA': CARD_SIZE}, self.cloud.usages(self.card))
        # The card is full: the next boot finds no host and leaves
        # nothing behind.
        self.no_valid_host('e2e.e2e-one', 'one-too-many')
        self.assertEqual(CARD_SIZE, len(self.cloud.arqs()))
        # A cyborg restart keeps every ARQ and every allocation.
        allocations = {s: self.cloud.allocations(s) for s in servers}
        before = self.last_seen()
        self.cloud.restart_cyborg()
        # Its agent said hello and then a heartbeat, so the restarted
        # conductor has taken the host back and run its periodic tasks.
        hello = e2e.wait(lambda: self.last_seen() > before and
                         self.last_seen(), 60, 'the agent\'s hello')
        e2e.wait(lambda: self.last_seen() > hello, 60, 'a heartbeat')
        self.assertEqual(arqs, {s: self.bound_arqs(s)[0] for s in servers})
        self.assertEqual(allocations,
                         {s: self.cloud.allocations(s) for s in servers})
        self.assertEqual({'FPGA': CARD_SIZE}, self.cloud.usages(self.card))

    def _record_cyborg_latency(self, since):
        """Latency of each kind of cyborg call Nova made during the burst,
        as Nova saw it (through the timing proxy)."""
        kinds = {}
        for method, path, status, seconds, _start in (
                self.cloud.proxy.calls_since(since)):
            kinds.setdefault('%s %s %d' % (method, path, status),
                             []).append(seconds * 1000)
        self.results['burst_cyborg_calls_ms'] = {
            kind: {'count': len(values),
                   'p50': round(statistics.median(values), 1),
                   'p90': round(percentile(values, 0.9), 1),
                   'max': round(max(values), 1)}
            for kind, values in sorted(kinds.items())}
