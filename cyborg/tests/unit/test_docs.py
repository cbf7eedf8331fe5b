"""The documentation, the API reference and the release notes build
without a single Sphinx warning (what ``tox -e docs``, ``-e api-ref`` and
``-e releasenotes`` run), and the checked-in sample configuration and
policy files are what the generators write today."""

from importlib import metadata
import os
import subprocess
import sys

import fixtures
import testtools

from cyborg.tests.unit import test_constraints
from cyborg.tests.unit import test_hygiene

TOP = test_hygiene.TOP
TREES = ('doc/source', 'api-ref/source', 'releasenotes/source')


class DocsBuildTest(testtools.TestCase):

    def build(self, tree):
        out = self.useFixture(fixtures.TempDir()).path
        result = subprocess.run(
            [sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-q',
             '-b', 'html', '-d', os.path.join(out, '.doctrees'),
             os.path.join(TOP, tree), out],
            cwd=TOP, capture_output=True, text=True, timeout=600)
        self.assertEqual(0, result.returncode,
                         '%s does not build cleanly:\n%s%s'
                         % (tree, result.stdout, result.stderr))

    def test_doc(self):
        self.build('doc/source')

    def test_api_ref(self):
        self.build('api-ref/source')

    def test_releasenotes(self):
        self.build('releasenotes/source')


#: The libraries whose options and rules the generators write beside
#: cyborg's: their help texts and options change between releases.
SAMPLE_LIBRARIES = ('keystoneauth1', 'keystonemiddleware', 'oslo.config',
                    'oslo.db', 'oslo.log', 'oslo.messaging',
                    'oslo.middleware', 'oslo.policy', 'oslo.service')


def unlike_the_constraints(libraries=SAMPLE_LIBRARIES):
    """'name installed, pinned' for each of ``libraries`` installed at
    another version than the default upper-constraints pin, under which
    the samples are written."""
    pins = test_constraints.read_constraints(os.path.join(
        test_constraints.CONSTRAINTS, test_constraints.FILES[-1]))
    found = []
    for name in libraries:
        installed = metadata.version(name)
        pinned = pins.get(name.replace('.', '-').lower())
        if pinned is not None and str(pinned) != installed:
            found.append('%s %s, pinned %s' % (name, installed, pinned))
    return found


class SamplesTest(testtools.TestCase):
    """etc/cyborg/*.sample are what ``tox -e genconfig`` and ``tox -e
    genpolicy`` write today; regenerate them with those commands.

    They are written with the libraries of the default upper-constraints
    (what CI installs); where other versions are installed, as in a run
    with the release before's constraints, the libraries' own help texts
    differ, so the comparison is only made where they are the same."""

    def setUp(self):
        super().setUp()
        other = unlike_the_constraints()
        if other:
            self.skipTest('the samples are written with the libraries of %s '
                          'and these are installed at other versions: %s'
                          % (test_constraints.FILES[-1], '; '.join(other)))

    def generate(self, tool, config):
        out = os.path.join(self.useFixture(fixtures.TempDir()).path,
                           'sample')
        result = subprocess.run(
            [test_hygiene._tool(tool) or tool, '--config-file',
             os.path.join(TOP, 'etc', 'cyborg', config), '--output-file',
             out], cwd=TOP, capture_output=True, text=True, timeout=300,
            env=dict(os.environ, PYTHONWARNINGS='ignore'))
        self.assertEqual(0, result.returncode, result.stderr)
        with open(out) as f:
            return f.read()

    def assert_current(self, sample, generated, command):
        with open(os.path.join(TOP, 'etc', 'cyborg', sample)) as f:
            checked_in = f.read()
        self.assertEqual(checked_in, generated,
                         'etc/cyborg/%s is stale: run "%s"'
                         % (sample, command))

    def test_config_sample_is_current(self):
        self.assert_current(
            'cyborg.conf.sample',
            self.generate('oslo-config-generator',
                          'cyborg-config-generator.conf'),
            'tox -e genconfig')

    def test_policy_sample_is_current(self):
        self.assert_current(
            'policy.yaml.sample',
            self.generate('oslopolicy-sample-generator',
                          'cyborg-policy-generator.conf'),
            'tox -e genpolicy')


class DevstackPluginTest(testtools.TestCase):
    """An operator who copies the plugin's ``enable_plugin`` line gets
    this cyborg, not upstream's repository and its own plugin."""

    UPSTREAM = 'opendev.org/openstack/cyborg'

    def test_enable_plugin_names_this_project(self):
        for name in ('README.rst', 'plugin.sh', 'settings'):
            with open(os.path.join(TOP, 'devstack', name)) as f:
                lines = [line for line in f if 'enable_plugin' in line]
            for line in lines:
                self.assertNotIn(self.UPSTREAM, line, name)
