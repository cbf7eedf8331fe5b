"""python-cyborgclient's ``openstack accelerator`` commands, as the
operators of each release of ``tools/lib/constraints/`` have them:
python-openstackclient and python-cyborgclient installed with that
release's upper-constraints into a virtualenv of their own (OpenStack
2026.1: python-openstackclient 9.0.0, python-cyborgclient 2.7.0,
openstacksdk 4.10.0; master of August 2026: 10.2.1, 2.8.0, 4.18.0).
Neither python-openstackclient has accelerator commands of its own, so
their ``openstack`` runs python-cyborgclient's. (``test_osc.py`` runs
python-openstackclient's own, from the release that added them.)

Each virtualenv is made once per machine, under ``upstream.CACHE`` in a
directory keyed on the constraints file (``upstream.cached_venv``), in
``setUpClass``; without PyPI the test is skipped, or fails under
``CYBORG_TEST_REQUIRE_SERVICES``.

Every command python-cyborgclient registers there (read from that
virtualenv's entry points) runs as users run it: that ``openstack``, in
a subprocess, ``--os-cloud`` from ``clients.AllInOne``'s ``clouds.yaml``,
at the client's default microversion, with the role that would run it;
each step checks what the API then holds. A command no step runs fails
the test. Three commands fail in the client itself (2.7.0 and 2.8.0
alike), before any request: the test expects exactly that failure (see
``BROKEN``).
"""

import json
import os
import subprocess

import fixtures
import testtools

from cyborg.tests import services
from cyborg.tests.functional import clients
from cyborg.tests.functional import osc_steps
from cyborg.tests.functional import upstream

GROUP = clients.GROUP
GROUP_NAME = 'openstack.accelerator.v2'
#: {release: its upper-constraints file}.
CONSTRAINTS = {
    release: os.path.join(upstream.TOP, 'tools', 'lib', 'constraints',
                          'upper-constraints-%s.txt' % release)
    for release in ('2026.1', 'master-2026-08')}
PACKAGES = ('python-openstackclient', 'python-cyborgclient')
POLICY = 'Policy does not allow'
INSTANCE = osc_steps.INSTANCE

COVERED = osc_steps.COVERED

#: The commands python-cyborgclient 2.7.0 and 2.8.0 cannot run: each
#: calls a method of openstacksdk's accelerator proxy that the
#: openstacksdk it is installed with (4.10.0 in 2026.1, 4.18.0 in
#: master's constraints) does not have, so it ends on an
#: AttributeError before it sends anything. That is the client's bug,
#: not the API's: ``describe`` below reads the client's source and the
#: SDK's proxy in the virtualenv and the test checks both. When a client
#: release fixes one, its entry here fails the test: run it for real.
BROKEN = {
    'accelerator deployable program': 'program',
    'accelerator device enable': 'enable_device',
    'accelerator device disable': 'disable_device',
}

#: Run by the virtualenv's Python: the commands of GROUP_NAME by the
#: distribution that registers them, the names of the public methods of
#: openstacksdk's accelerator proxy, the proxy methods each command's
#: class calls (``acc_client.<name>(``, in its own source: the helpers
#: it calls are not followed) and the versions of the distributions
#: named.
_INSPECT = r'''
import inspect, json, re, sys
from importlib import import_module, metadata
from openstack.accelerator.v2 import _proxy
commands, calls = {}, {}
for point in metadata.entry_points(group=sys.argv[1]):
    name = point.name.replace('_', ' ')
    commands.setdefault(point.dist.name, []).append(name)
    module, _, attr = point.value.partition(':')
    source = inspect.getsource(getattr(import_module(module), attr))
    calls[name] = sorted(set(re.findall(r'acc_client\.(\w+)\(', source)))
print(json.dumps({
    'commands': commands, 'calls': calls,
    'proxy': sorted(n for n in dir(_proxy.Proxy) if not n.startswith('_')),
    'versions': {d: metadata.version(d) for d in sys.argv[2:]}}))
'''


def client_venv(release):
    """The bin directory of the virtualenv of ``release``'s clients,
    made if there is none yet; ``upstream.Unavailable`` when it cannot
    be."""
    constraints = CONSTRAINTS[release]
    return upstream.cached_venv(
        'clients-' + release, [constraints],
        ['-c', constraints] + list(PACKAGES),
        'python-openstackclient and python-cyborgclient with %s'
        % os.path.basename(constraints), key=PACKAGES)


def pins(release, *names):
    """The versions ``release``'s constraints pin ``names`` to."""
    found = {}
    with open(CONSTRAINTS[release]) as f:
        for line in f:
            name, _, version = line.strip().partition('===')
            if name in names:
                found[name] = version.split(';')[0]
    return found


def describe(bin_dir, cwd):
    """What ``_INSPECT`` says of the virtualenv ``bin_dir``."""
    done = subprocess.run(
        [os.path.join(bin_dir, 'python'), '-c', _INSPECT, GROUP_NAME,
         'openstacksdk'] + list(PACKAGES), capture_output=True, text=True,
        timeout=120, env=upstream._env(), cwd=cwd)
    if done.returncode:
        raise AssertionError('inspecting the clients failed:\n' + done.stderr)
    return json.loads(done.stdout)


class _Commands(osc_steps.Steps):
    """The steps; a test class per release and microversion mixes them
    in."""

    profile = 'cc-dp'
    #: The client's ``arq bind`` takes the project too (and does not
    #: send it).
    bind_extra = (clients.PROJECT,)

    #: The release of tools/lib/constraints/ the clients are installed
    #: with.
    release = None
    #: Whether the list commands run with ``--long`` (more columns, the
    #: same request).
    long = False

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The first run on a machine installs the clients from PyPI:
        # here, not inside the test.
        cls.bin_dir = cls.unavailable = None
        try:
            cls.bin_dir = client_venv(cls.release)
        except upstream.Unavailable as e:
            cls.unavailable = str(e)

    def setUp(self):
        super().setUp()
        if self.unavailable:
            services.unavailable(self, self.unavailable)
        home = self.useFixture(fixtures.TempDir()).path
        self.found = describe(self.bin_dir, home)
        self.aio = self.useFixture(clients.AllInOne(self))
        self.ran = set()
        self.env = {'HOME': home, 'PATH': os.environ.get('PATH', ''),
                    'OS_CLIENT_CONFIG_FILE': self.aio.clouds_yaml}

    def listing(self, cloud, command):
        """A list command's rows, with ``--long`` where the class says."""
        return self.osc(cloud, command, *(('--long',) if self.long else ()))

    def assert_long(self, held, row, *columns):
        """With ``--long``, ``row`` shows ``columns`` as the API holds
        them."""
        if self.long:
            self.assertEqual({c: held[c] for c in columns},
                             {c: row[c] for c in columns})

    def check_bound(self, bound):
        if self.long:
            [row] = self.listing('member', 'arq list')
            self.assert_long(bound, row, 'hostname', 'device_rp_uuid',
                             'instance_uuid', 'attach_handle_type',
                             'attach_handle_info')

    def assert_broken(self, cloud, command, *args):
        """The command fails in python-cyborgclient itself, as ``BROKEN``
        says."""
        self.assert_refused("'Proxy' object has no attribute '%s'"
                            % BROKEN['accelerator ' + command], cloud,
                            command, *args, json_output=False)
        self.ran.add('accelerator ' + command)

    def test_every_command(self):
        # The release's pins of python-openstackclient,
        # python-cyborgclient and openstacksdk.
        self.assertEqual(pins(self.release, 'openstacksdk', *PACKAGES),
                         self.found['versions'])
        # Only python-cyborgclient registers accelerator commands, so
        # they are what ``openstack`` runs.
        self.assertEqual(['python-cyborgclient'],
                         list(self.found['commands']))
        self.assertEqual(set(COVERED), set(
            self.found['commands']['python-cyborgclient']),
            'commands of python-cyborgclient the table lacks')
        # Each broken command calls a method the SDK's proxy lacks; the
        # others call only methods it has.
        proxy = set(self.found['proxy'])
        for name, calls in self.found['calls'].items():
            missing = sorted(set(calls) - proxy)
            self.assertEqual([BROKEN[name]] if name in BROKEN else [],
                             missing, name)
        uuid = self.device_profiles()
        self.hardware()
        self.accelerator_requests()
        self.osc('admin', 'device profile delete', uuid, json_output=False)
        self.assertEqual(404, self.get('/v2/device_profiles/' + uuid))
        self.assertEqual(set(COVERED), self.ran,
                         'commands of python-cyborgclient no step runs')

    def device_profiles(self):
        # The groups are one JSON argument, not OSC 10.4's --group.
        made = self.osc('admin', 'device profile create', 'cc-dp',
                        json.dumps([GROUP]), '--description',
                        'made by python-cyborgclient')
        held = self.get('/v2/device_profiles/' + made['uuid'])[
            'device_profile']
        self.assertEqual(('cc-dp', [GROUP], 'made by python-cyborgclient'),
                         (held['name'], held['groups'], held['description']))
        [row] = [p for p in self.listing('member', 'device profile list')
                 if p['uuid'] == made['uuid']]
        self.assert_long(held, row, 'created_at', 'updated_at')
        self.assertEqual([GROUP], self.osc(
            'member', 'device profile show', made['uuid'])['groups'])
        if self.version == '2.0':
            # By name from 2.2, as upstream.
            self.assert_refused('needs microversion 2.2', 'member',
                                'device profile show', 'cc-dp')
        else:
            # The client's default microversion is 2.3.
            self.assertEqual(made['uuid'], self.osc(
                'member', 'device profile show', 'cc-dp')['uuid'])
        if self.refusals:
            self.assert_refused(POLICY, 'member', 'device profile create',
                                'x', json.dumps([{'resources:FPGA': '1'}]))
            self.assertEqual([], self.get('/v2/device_profiles?name=x')[
                'device_profiles'])
        return made['uuid']

    def deployables(self):
        [expected] = self.aio.deployables
        [listed] = self.listing('admin', 'deployable list')
        self.assertEqual((expected['uuid'], expected['name']),
                         (listed['uuid'], listed['name']))
        self.assert_long(expected, listed, 'num_accelerators', 'device_id',
                         'parent_id', 'root_id', 'created_at')
        self.assertEqual(expected['name'], self.osc(
            'admin', 'deployable show', expected['uuid'])['name'])
        path = '/v2/deployables/' + expected['uuid']
        before = self.get(path)
        self.assert_broken('admin', 'deployable program', expected['uuid'],
                           self.aio.image['id'])
        self.assertEqual(before, self.get(path))

    def devices(self):
        [device] = self.listing('admin', 'device list')
        self.assertEqual(('FPGA', self.aio.hostname),
                         (device['type'], device['hostname']))
        path = '/v2/devices/' + device['uuid']
        self.assert_long(self.get(path), device, 'vendor', 'model',
                         'vendor_board_info', 'created_at')
        shown = self.osc('admin', 'device show', device['uuid'])
        # openstacksdk's Device (4.10, 4.18) has no status field: the
        # column is empty even where the API sends it (from 2.3, the
        # client's default).
        self.assertEqual((device['uuid'], ''),
                         (shown['uuid'], shown['status']))
        self.assertEqual('enabled', self.get(path, '2.3')['status'])
        if self.refusals:
            self.assert_refused(POLICY, 'member', 'device show',
                                device['uuid'])
        self.assert_broken('admin', 'device disable', device['uuid'])
        self.assertEqual('enabled', self.get(path, '2.3')['status'])
        self.assert_broken('admin', 'device enable', device['uuid'])
        self.assertEqual('enabled', self.get(path, '2.3')['status'])

    def attributes(self):
        listed = self.osc('admin', 'device attribute list')
        deployable_id = listed[0]['deployable_id']
        made = self.osc('admin', 'device attribute create',
                        str(deployable_id), 'owner', 'team-a')
        path = '/v2/attributes/' + made['uuid']
        held = self.get(path)
        self.assertEqual(('owner', 'team-a', deployable_id),
                         (held['key'], held['value'], held['deployable_id']))
        [row] = [a for a in self.listing('admin', 'device attribute list')
                 if a['uuid'] == made['uuid']]
        self.assert_long(held, row, 'key', 'value', 'created_at')
        self.assertEqual('team-a', self.osc(
            'admin', 'device attribute show', made['uuid'])['value'])
        self.osc('admin', 'device attribute delete', made['uuid'],
                 json_output=False)
        self.assertEqual(404, self.get(path))

class DefaultMicroversionTest(_Commands, testtools.TestCase):
    """OpenStack 2026.1's clients, at the microversion python-cyborgclient
    sends unless told: its ``--os-accelerator-api-version`` defaults to
    2.3."""

    release = '2026.1'
    refusals = True


class Microversion20Test(_Commands, testtools.TestCase):
    """OpenStack 2026.1's clients with ``--os-accelerator-api-version
    2.0``, the microversion python-openstackclient 10.4 sends unless
    told."""

    release = '2026.1'
    version = '2.0'
    long = True


class MasterDefaultMicroversionTest(DefaultMicroversionTest):
    """The clients of master's constraints (August 2026), at the
    client's default microversion."""

    release = 'master-2026-08'


class MasterMicroversion20Test(Microversion20Test):
    """The clients of master's constraints (August 2026) at 2.0."""

    release = 'master-2026-08'
