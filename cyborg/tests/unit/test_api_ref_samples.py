"""The samples of the API reference (``api-ref/source/samples``) are
valid JSON, and every response sample of a resource shows exactly the
fields that the resource's view function in its controller emits (at
the newest microversion for v2), so the reference cannot drift from the
code."""

import glob
import json
import os
import types

import fixtures
import oslo_messaging as messaging
import webob

from cyborg.api.controllers import root
from cyborg.api.controllers.v1 import accelerators as v1_accelerators
from cyborg.api.controllers.v2 import accelerator_requests
from cyborg.api.controllers.v2 import attributes
from cyborg.api.controllers.v2 import deployables
from cyborg.api.controllers.v2 import device_profiles
from cyborg.api.controllers.v2 import devices
from cyborg.api.controllers.v2 import drivers
from cyborg.api.controllers.v2 import hosts
from cyborg.api.controllers.v2 import services
from cyborg.api import microversion
from cyborg.common import context
from cyborg.common import states
from cyborg.conductor import drivers as conductor_drivers
from cyborg.db import accelerators as db_accelerators
from cyborg.db import deployables as db_deployables
from cyborg.db import hardware as db_hardware
from cyborg.db import hosts as db_hosts
from cyborg.objects import hardware as hardware_obj
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests.unit import test_hygiene

SAMPLES = os.path.join(test_hygiene.TOP, 'api-ref', 'source', 'samples')
UUID = '9d1f5a3c-7e2b-4c8d-a6f0-2b4e8c1d3a57'
NEXT = 'next'


class FakeRow:
    """A database row (or ARQ view) whose every field is None, but for
    those a view needs to build its body."""

    uuid = UUID
    profile_json = '{"groups": []}'
    state = states.BOUND

    def __getattr__(self, name):
        return None


def _deployable_view(request, row):
    return deployables.deployable_view(request, row, [('rc', 'FPGA')])


def _v1_accelerator_view(request, row):
    """A v1 accelerator: the row with its deployable, device and the
    deployable's attributes, as cyborg.db.accelerators reads them."""
    view = db_accelerators.View(
        row=row, deployable_uuid=UUID, num_accelerators=1,
        device_uuid=UUID, hostname='compute-0', device_type='FPGA',
        attributes=[('rc', 'FPGA'), ('trait0', 'CUSTOM_FAKE_DEVICE')])
    return v1_accelerators.accelerator_view(request, view)


# samples/<directory>: (its view, the key of a list, the key wrapping
# one item or None when an item comes bare).
RESOURCES = {
    'device_profiles': (device_profiles.view, 'device_profiles',
                        'device_profile'),
    'accelerator_requests': (accelerator_requests.view, 'arqs', None),
    'deployables': (_deployable_view, 'deployables', None),
    'devices': (devices.device_view, 'devices', None),
    'attributes': (attributes.attribute_view, 'attributes', None),
    'v1_accelerators': (_v1_accelerator_view, 'accelerators', None),
}


def _load(path):
    with open(path) as f:
        return json.load(f)


def _request():
    request = webob.Request.blank('/v2', base_url='http://127.0.0.1:6666')
    request.version = microversion.MAX_VERSION
    # The samples show what an administrator reads.
    request.context = context.get_admin_context()
    return request


class SamplesAreJSONTest(base.TestCase):

    def test_every_sample_parses(self):
        paths = glob.glob(os.path.join(SAMPLES, '**', '*.json'),
                          recursive=True)
        self.assertTrue(paths, 'no samples under %s' % SAMPLES)
        for path in paths:
            try:
                _load(path)
            except ValueError as exc:
                self.fail('%s is not valid JSON: %s' % (path, exc))


class SamplesMatchViewsTest(base.TestCase):

    def expected_keys(self, resource):
        view = RESOURCES[resource][0]
        return set(view(_request(), FakeRow()))

    def items_of(self, resource, body, name):
        """The items of a response body, checking its envelope."""
        _view, list_key, item_key = RESOURCES[resource]
        if isinstance(body, dict) and list_key in body:
            self.assertEqual(set(), set(body) - {list_key, NEXT},
                             '%s: unexpected keys' % name)
            self.assertIsInstance(body[list_key], list, name)
            self.assertIsInstance(body.get(NEXT, ''), str, name)
            return body[list_key]
        if item_key is not None and isinstance(body, dict) and (
                item_key in body):
            self.assertEqual({item_key}, set(body), name)
            return [body[item_key]]
        return [body]

    def check_resource(self, resource):
        expected = self.expected_keys(resource)
        paths = sorted(glob.glob(os.path.join(SAMPLES, resource,
                                              '*-resp.json')))
        names = [os.path.basename(path) for path in paths]
        for kind in ('list', 'getone'):
            self.assertIn('%s-%s-resp.json' % (resource, kind), names)
        for path, name in zip(paths, names, strict=True):
            items = self.items_of(resource, _load(path), name)
            self.assertTrue(items, '%s shows no item' % name)
            for item in items:
                self.assertIsInstance(item, dict, name)
                self.assertEqual(expected, set(item),
                                 '%s does not show what the view emits'
                                 % name)

    def test_device_profiles(self):
        self.check_resource('device_profiles')

    def test_accelerator_requests(self):
        self.check_resource('accelerator_requests')

    def test_deployables(self):
        self.check_resource('deployables')

    def test_devices(self):
        self.check_resource('devices')

    def test_attributes(self):
        self.check_resource('attributes')

    def test_v1_accelerators(self):
        self.check_resource('v1_accelerators')

    def test_v1_accelerator_specs(self):
        """``acc_specs`` is an object too: its keys are the view's."""
        expected = set(_v1_accelerator_view(_request(),
                                            FakeRow())['acc_specs'])
        self.assertEqual({'remote', 'num', 'device_type', 'acc_capability'},
                         expected)
        for path in sorted(glob.glob(os.path.join(
                SAMPLES, 'v1_accelerators', '*-resp.json'))):
            name = os.path.basename(path)
            for item in self.items_of('v1_accelerators', _load(path), name):
                self.assertEqual(expected, set(item['acc_specs']), name)

    def test_root_document_lists_v1_after_v2(self):
        body = _load(os.path.join(SAMPLES, 'versions',
                                  'get-root-resp.json'))
        self.assertEqual(['v2', 'v1'], [v['id'] for v in body['versions']])
        self.assertEqual(root.v1_summary(_request()), body['versions'][1])

    def test_fake_row_gives_real_views(self):
        """The views build their bodies from the fake row (a broken view
        would make the comparisons above meaningless)."""
        for resource in RESOURCES:
            keys = self.expected_keys(resource)
            self.assertIn('uuid', keys, resource)
            self.assertIn('links', keys, resource)


# The resources of microversion 2.5 (the generic-driver operations).

class FakeHost(FakeRow):
    """A host row: its name makes its link."""

    hostname = 'compute-0'
    status = 'up'


class FakeAgents:
    """The agents as the conductor calls them: ``answer`` is what
    ``discover_now`` returns, or raises when it is an exception."""

    def __init__(self, answer):
        self.answer = answer

    def discover_now(self, context, host, timeout=None):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _sample(resource, name):
    return _load(os.path.join(SAMPLES, resource, name))


class OperationSamplesMatchCodeTest(base.TestCase):
    """The response samples of hosts, drivers, services, discovery and
    attachments show exactly the keys their code emits. Hosts have a view
    function; the other rows are built where they are answered (the
    controller or the conductor), so those are run on fake rows."""

    #: samples/<directory>: the response samples the tests below check.
    CHECKED = {
        'hosts': {'hosts-list-resp.json', 'hosts-getone-resp.json'},
        'drivers': {'drivers-list-resp.json', 'drivers-install-resp.json',
                    'drivers-update-resp.json'},
        'services': {'services-list-resp.json'},
        'discovery': {'discovery-create-resp.json'},
        'attachments': {'attachments-create-resp.json'},
        'hardware': {'hardware-list-resp.json'},
    }

    def rows_of(self, resource, name, key):
        """The rows of a sample whose body is ``{key: [rows]}``."""
        body = _sample(resource, name)
        self.assertEqual({key}, set(body), name)
        self.assertIsInstance(body[key], list, name)
        self.assertTrue(body[key], '%s shows no item' % name)
        for row in body[key]:
            self.assertIsInstance(row, dict, name)
        return body[key]

    def assert_keys(self, expected, rows, name):
        for row in rows:
            self.assertEqual(expected, set(row),
                             '%s does not show what the code emits' % name)

    def test_every_response_sample_is_checked(self):
        for resource, checked in self.CHECKED.items():
            found = {os.path.basename(path) for path in glob.glob(
                os.path.join(SAMPLES, resource, '*-resp.json'))}
            self.assertEqual(checked, found, resource)

    def test_hosts(self):
        view = hosts.host_view(_request(), FakeHost(), [FakeRow()])
        expected_driver = set(view['drivers'][0])
        self.assertEqual({'name', 'status', 'device_type', 'version',
                          'error'}, expected_driver)
        shown = (self.rows_of('hosts', 'hosts-list-resp.json', 'hosts') +
                 [_sample('hosts', 'hosts-getone-resp.json')])
        self.assert_keys(set(view), shown, 'hosts')
        for host in shown:
            self.assertTrue(host['drivers'], 'a sample host has no driver')
            self.assert_keys(expected_driver, host['drivers'], 'hosts')

    def list_row_keys(self):
        """The keys of a row of ``GET /v2/drivers``."""
        self.useFixture(fixtures.MockPatchObject(
            db_hosts, 'get_all', return_value=[(FakeHost(), [FakeRow()])]))
        [row] = drivers._rows(None)
        return set(row)

    def operation_row_keys(self):
        """The keys of a row of an install or update: the same whether
        the agent answered, failed or did not answer."""
        status = host_obj.HostDriver(name='intel_qat_driver',
                                     status='READY', device_type='QAT',
                                     version='1.0', error=None)
        keys = {frozenset(conductor_drivers.Drivers._row(
            'compute-0', 'intel_qat_driver', result))
            for result in (status, RuntimeError('it broke'),
                           messaging.MessagingTimeout())}
        self.assertEqual(1, len(keys), keys)
        return set(keys.pop())

    def test_drivers(self):
        expected = self.list_row_keys()
        self.assertEqual(expected, self.operation_row_keys())
        for name in sorted(self.CHECKED['drivers']):
            self.assert_keys(expected,
                             self.rows_of('drivers', name, 'drivers'), name)

    def test_hardware(self):
        # The rows are the database's, with the host first.
        expected = {'host'} | set(db_hardware.COLUMNS)
        self.assertEqual(set(hardware_obj.HardwareFunction.COLUMNS),
                         set(db_hardware.COLUMNS))
        self.assert_keys(expected, self.rows_of(
            'hardware', 'hardware-list-resp.json', 'hardware'), 'hardware')

    def test_services(self):
        row = FakeRow()
        self.useFixture(fixtures.MockPatchObject(
            db_deployables, 'services', return_value=(
                [row], {row.id: [('rc', 'CUSTOM_QAT'),
                                 ('trait0', 'CUSTOM_QAT_CRYPTO')]})))
        self.useFixture(fixtures.MockPatchObject(services.common,
                                                 'authorize'))
        # The controller reads its query through pecan.request.
        self.useFixture(fixtures.MockPatchObject(
            services, 'pecan', types.SimpleNamespace(request=_request())))
        [emitted] = services.ServicesController().index_get()['services']
        self.assertEqual('crypto', emitted['service'])
        self.assert_keys(set(emitted), self.rows_of(
            'services', 'services-list-resp.json', 'services'), 'services')

    def discovery_row_keys(self):
        self.useFixture(fixtures.MockPatchObject(db_hosts,
                                                 'get_by_hostname'))
        keys = set()
        for answer in ({'registered': True, 'devices': 2,
                        'deployables': 3},
                       messaging.MessagingTimeout()):
            [row] = conductor_drivers.Drivers(
                None, agents=FakeAgents(answer)).discover(None, 'compute-0')
            keys.add(frozenset(row))
        self.assertEqual(1, len(keys), keys)
        return set(keys.pop())

    def test_discovery(self):
        self.assert_keys(self.discovery_row_keys(), self.rows_of(
            'discovery', 'discovery-create-resp.json', 'hosts'),
            'discovery')

    def test_attachments(self):
        expected = set(accelerator_requests.view(_request(), FakeRow()))
        self.assert_keys(expected, self.rows_of(
            'attachments', 'attachments-create-resp.json', 'arqs'),
            'attachments')


class VersionSamplesTest(base.TestCase):

    def test_max_version_is_the_newest_microversion(self):
        """Every version document sample shows the server's maximum."""
        newest = str(microversion.MAX_VERSION)
        seen = 0
        for path in sorted(glob.glob(os.path.join(SAMPLES, 'versions',
                                                  '*.json'))):
            body = _load(path)
            documents = (body.get('versions', []) +
                         [body.get('default_version') or {}, body])
            for document in documents:
                if 'max_version' in document:
                    seen += 1
                    self.assertEqual(newest, document['max_version'],
                                     os.path.basename(path))
        self.assertTrue(seen, 'no version sample shows max_version')
