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
import os
import statistics
import tempfile
import time

import testtools

from cyborg.tests.e2e import cloud as e2e
from cyborg.tests.e2e import standins
from cyborg.tests import services

WORKDIR_ENV = 'CYBORG_NOVA_E2E_WORKDIR'
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


class NovaBootsWithCyborgTest(testtools.TestCase):

    results = {}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.venv = os.environ.get(e2e.VENV_ENV)
        if not cls.venv:
            return
        workdir = os.environ.get(WORKDIR_ENV) or tempfile.mkdtemp(
            prefix='cyborg-nova-e2e-')
        cls.workdir = workdir
        cls.cloud = e2e.NovaCloud(cls.venv, workdir)
        cls.cloud.setUp()
        try:
            cls.flavors = {}
            for name, groups in PROFILES.items():
                cls.cloud.cyborg('POST', '/device_profiles', [
                    {'name': name, 'groups': groups}], expect=201)
            for name, profile in FLAVORS.items():
                cls.flavors[name] = cls._flavor(name, profile)
        except Exception:
            cls.cloud.cleanUp()
            raise

    @classmethod
    def _flavor(cls, name, profile):
        flavor = cls.cloud.nova('POST', '/flavors', {'flavor': {
            'name': name, 'ram': 64, 'vcpus': 1, 'disk': 1}}, admin=True,
            expect=200).json()['flavor']
        cls.cloud.nova('POST', '/flavors/%s/os-extra_specs' % flavor['id'],
                       {'extra_specs': {'accel:device_profile': profile}},
                       admin=True, expect=200)
        return flavor['id']

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, 'cloud', None) is not None:
            with open(os.path.join(cls.workdir, 'results.json'), 'w') as f:
                json.dump(cls.results, f, indent=2, sort_keys=True)
            cls.cloud.cleanUp()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        if not self.venv:
            self.skipTest('%s is not set: run tools/nova-e2e' % e2e.VENV_ENV)
        for name in ('rabbit', 'mysql'):
            services.require(self, name)
        self.cloud.check_running()
        tree = self.cloud.provider_tree()
        [self.card] = [p['uuid'] for p in tree['children']]
        self.failures_before = len(self.cloud.proxy.failures)
        self.addCleanup(self._nothing_left_behind)
        self.addCleanup(self._report_strays)

    # -- helpers ----------------------------------------------------------

    def boot(self, flavor, name='e2e', wait=True):
        server = self.cloud.nova('POST', '/servers', {'server': {
            'name': name, 'imageRef': standins.IMAGE_ID,
            'flavorRef': self.flavors[flavor], 'networks': 'none'}},
            expect=202).json()['server']['id']
        self.addCleanup(self.delete, server)
        if wait:
            self.wait_for(server, 'ACTIVE')
        return server

    def server(self, server):
        return self.cloud.nova('GET', '/servers/%s' % server,
                               expect=200).json()['server']

    def wait_for(self, server, status, task_state=None):
        def reached():
            shown = self.server(server)
            if shown['status'] == 'ERROR' and status != 'ERROR':
                raise AssertionError('server %s is ERROR: %s' % (
                    server, shown.get('fault')))
            return (shown['status'] == status and
                    shown.get('OS-EXT-STS:task_state') == task_state and
                    shown)
        return e2e.wait(reached, e2e.BOOT_TIMEOUT,
                        'server %s %s' % (server, status))

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

    def action(self, server, body, expect=202, admin=False):
        return self.cloud.nova('POST', '/servers/%s/action' % server, body,
                               expect=expect, admin=admin)

    def delete(self, server):
        response = self.cloud.nova('DELETE', '/servers/%s' % server)
        if response.status_code == 404:
            return
        self.assertEqual(204, response.status_code, response.text)
        e2e.wait(lambda: self.cloud.nova(
            'GET', '/servers/%s' % server).status_code == 404,
            e2e.BOOT_TIMEOUT, 'server %s deleted' % server)
        left = self.cloud.arqs(server)
        if left:
            # Nova logs a failed delete and goes on: say what it saw.
            raise AssertionError(
                'server %s is deleted but its ARQs are not: %s\n'
                'Nova\'s calls that failed: %s\nnova-compute on it:\n%s\n'
                'cyborg\'s warnings and errors:\n%s' % (
                    server, left, self.cloud.proxy.failures,
                    '\n'.join(self.cloud.log_lines('nova-compute', server)[
                        -20:]),
                    '\n'.join(
                        [line for line in self.cloud.log_lines('cyborg-aio')
                         if ' WARNING ' in line or ' ERROR ' in line][-20:])))
        self.assertEqual({}, self.cloud.allocations(server))

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

    def last_seen(self):
        return self.cloud.cyborg('GET', '/hosts/%s' % e2e.HOST,
                                 version='2.5',
                                 expect=200).json()['last_seen_at']

    def _nothing_left_behind(self):
        """After each test: no ARQ, no FPGA in use, the card whole."""
        self.assertEqual([], [a for a in self.cloud.arqs()
                              if a['instance_uuid']])
        self.assertEqual({'FPGA': 0}, self.cloud.usages(self.card))

    def _report_strays(self):
        for standin in (self.cloud.glance, self.cloud.neutron):
            self.assertEqual([], standin.unexpected)
        # No call of Nova's to cyborg failed on cyborg's side.
        self.assertEqual([], self.cloud.proxy.failures[self.failures_before:])

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
        server = self.boot('e2e.e2e-unknown-trait', wait=False)
        shown = self.wait_for(server, 'ERROR')
        self.assertIn('No valid host', shown['fault']['message'])
        self.assertEqual([], self.cloud.arqs(server))
        self.assertEqual({}, self.cloud.allocations(server))

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
        extra = self.boot('e2e.e2e-one', name='one-too-many', wait=False)
        shown = self.wait_for(extra, 'ERROR')
        self.assertIn('No valid host', shown['fault']['message'])
        self.assertEqual([], self.cloud.arqs(extra))
        self.assertEqual({}, self.cloud.allocations(extra))
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
