"""The samples of the API reference (``api-ref/source/samples``) are
valid JSON, and every response sample of a resource shows exactly the
fields that the resource's view function in its controller emits (at
the newest microversion), so the reference cannot drift from the code."""

import glob
import json
import os

import webob

from cyborg.api.controllers.v2 import accelerator_requests
from cyborg.api.controllers.v2 import attributes
from cyborg.api.controllers.v2 import deployables
from cyborg.api.controllers.v2 import device_profiles
from cyborg.api.controllers.v2 import devices
from cyborg.api import microversion
from cyborg.common import states
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


# samples/<directory>: (its view, the key of a list, the key wrapping
# one item or None when an item comes bare).
RESOURCES = {
    'device_profiles': (device_profiles.view, 'device_profiles',
                        'device_profile'),
    'accelerator_requests': (accelerator_requests.view, 'arqs', None),
    'deployables': (_deployable_view, 'deployables', None),
    'devices': (devices.device_view, 'devices', None),
    'attributes': (attributes.attribute_view, 'attributes', None),
}


def _load(path):
    with open(path) as f:
        return json.load(f)


def _request():
    request = webob.Request.blank('/v2', base_url='http://127.0.0.1:6666')
    request.version = microversion.MAX_VERSION
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

    def test_fake_row_gives_real_views(self):
        """The views build their bodies from the fake row (a broken view
        would make the comparisons above meaningless)."""
        for resource in RESOURCES:
            keys = self.expected_keys(resource)
            self.assertIn('uuid', keys, resource)
            self.assertIn('links', keys, resource)
