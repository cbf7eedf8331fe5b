"""The shared end-to-end test case's own life (``base.E2ETestCase``), with
a cloud that only records what it is asked; no Nova needed, so these run
in every suite."""

import json
import os
import unittest

import fixtures
import testtools

from cyborg.tests.e2e import base
from cyborg.tests.e2e import cloud as e2e


class _Answer:

    def __init__(self, body):
        self.body = body

    def json(self):
        return self.body


class RecordingCloud:
    """Answers ``cyborg`` and ``nova`` as the services would for device
    profiles and flavors, and records every call."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.calls = []
        self.cleaned_up = 0

    def cyborg(self, method, path, body=None, expect=None):
        self.calls.append(('cyborg', method, path, body, expect))

    def nova(self, method, path, body=None, admin=False, expect=None):
        self.calls.append(('nova', method, path, body, admin, expect))
        if path == '/flavors':
            return _Answer({'flavor': {
                'id': 'id-' + body['flavor']['name']}})
        return _Answer({})

    def cleanUp(self):
        self.cleaned_up += 1


def sample_case(cloud, fail_set_up=False, **attributes):
    """A test case on ``cloud``, with ``attributes``."""

    class Sample(base.E2ETestCase):
        started = 0

        @classmethod
        def start_cloud(cls):
            cls.started += 1
            return cloud

        @classmethod
        def set_up_cloud(cls):
            super().set_up_cloud()
            if fail_set_up:
                raise RuntimeError('set-up failed')

        def test_nothing(self):
            pass

    for name, value in attributes.items():
        setattr(Sample, name, value)
    return Sample


class E2ETestCaseTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.workdir = self.useFixture(fixtures.TempDir()).path
        self.cloud = RecordingCloud(self.workdir)

    def test_without_nova_no_cloud_and_every_test_skipped(self):
        self.useFixture(fixtures.EnvironmentVariable(e2e.VENV_ENV))
        case = sample_case(self.cloud)
        case.setUpClass()
        self.assertEqual((0, None), (case.started, case.cloud))
        result = unittest.TestResult()
        case('test_nothing').run(result)
        self.assertEqual(1, len(result.skipped), result.errors)
        self.assertIn(e2e.VENV_ENV, result.skipped[0][1])
        case.tearDownClass()
        self.assertEqual([], self.cloud.calls)
        self.assertEqual(0, self.cloud.cleaned_up)

    def test_profiles_flavors_results_and_clean_up(self):
        self.useFixture(fixtures.EnvironmentVariable(e2e.VENV_ENV, 'venv'))
        case = sample_case(self.cloud, profiles={'p1': [{'a': '1'}]},
                           results={})
        case.setUpClass()
        self.assertEqual((1, self.cloud), (case.started, case.cloud))
        self.assertEqual(
            [('cyborg', 'POST', '/device_profiles',
              [{'name': 'p1', 'groups': [{'a': '1'}]}], 201),
             ('nova', 'POST', '/flavors', {'flavor': {
                 'name': 'e2e.p1', 'ram': 64, 'vcpus': 1, 'disk': 1}},
              True, 200),
             ('nova', 'POST', '/flavors/id-e2e.p1/os-extra_specs',
              {'extra_specs': {'accel:device_profile': 'p1'}}, True, 200)],
            self.cloud.calls)
        self.assertEqual({'e2e.p1': 'id-e2e.p1'}, case.flavors)
        case.results['figure'] = 1.5
        case.tearDownClass()
        self.assertEqual(1, self.cloud.cleaned_up)
        with open(os.path.join(self.workdir, 'results.json')) as f:
            self.assertEqual({'figure': 1.5}, json.load(f))

    def test_no_results_file_without_results(self):
        self.useFixture(fixtures.EnvironmentVariable(e2e.VENV_ENV, 'venv'))
        case = sample_case(self.cloud)
        case.setUpClass()
        case.tearDownClass()
        self.assertEqual(1, self.cloud.cleaned_up)
        self.assertEqual([], os.listdir(self.workdir))

    def test_a_failed_set_up_cleans_the_cloud_up(self):
        self.useFixture(fixtures.EnvironmentVariable(e2e.VENV_ENV, 'venv'))
        case = sample_case(self.cloud, fail_set_up=True)
        self.assertRaises(RuntimeError, case.setUpClass)
        self.assertEqual(1, self.cloud.cleaned_up)

    def test_a_flavor_without_a_profile_has_no_extra_specs(self):
        self.assertEqual('id-plain', base.add_flavor(self.cloud, 'plain'))
        self.assertEqual(['/flavors'], [c[2] for c in self.cloud.calls])

    def test_work_directory(self):
        self.useFixture(fixtures.EnvironmentVariable(base.WORKDIR_ENV,
                                                     self.workdir))
        self.assertEqual(self.workdir, base.work_directory())
        made = base.work_directory('two-hosts')
        self.assertEqual(os.path.join(self.workdir, 'two-hosts'), made)
        self.assertTrue(os.path.isdir(made))
