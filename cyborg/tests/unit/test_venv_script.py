"""tools/lib/venv.sh: tools/aio installs what the service needs to run,
tools/run-tests adds what the tests need; stamps skip what is there.

Run against a virtualenv whose python only writes down how pip was
called, so no package is installed."""

import os
import subprocess

import fixtures
import testtools

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                   '..'))
FAKE_PYTHON = '#!/bin/sh\necho "$*" >> "$(dirname "$0")/../pip.log"\n'
CONSTRAINTS = 'tools/lib/constraints/upper-constraints-master-2026-08.txt'


class VenvScriptTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.top = self.useFixture(fixtures.TempDir()).path
        for name in ('requirements.txt', 'test-requirements.txt',
                     'setup.cfg'):
            self.write(name, name + '\n')
        bin_dir = os.path.join(self.top, '.venv', 'bin')
        os.makedirs(bin_dir)
        self.write('.venv/bin/python', FAKE_PYTHON)
        os.chmod(os.path.join(bin_dir, 'python'), 0o755)
        os.makedirs(os.path.join(self.top, 'tools', 'lib', 'constraints'))
        self.write(CONSTRAINTS, 'foo===1.0\n')
        self.env = dict(os.environ)
        self.env.pop('CYBORG_CONSTRAINTS', None)
        self.seen = 0

    def write(self, name, text):
        with open(os.path.join(self.top, name), 'w') as f:
            f.write(text)

    def venv(self, *part):
        """Run cyborg_venv; its output and the pip calls it made."""
        out = subprocess.run(
            ['bash', '-c', '. "$1"; cyborg_venv "$2" $3', 'venv',
             os.path.join(TOP, 'tools', 'lib', 'venv.sh'), self.top]
            + list(part), check=True, capture_output=True, text=True,
            env=self.env).stdout
        try:
            with open(os.path.join(self.top, '.venv', 'pip.log')) as f:
                calls = f.read().splitlines()
        except FileNotFoundError:
            calls = []
        new, self.seen = calls[self.seen:], len(calls)
        return out, [call.replace(self.top + '/', '') for call in new]

    def test_aio_installs_what_the_service_needs_and_says_so(self):
        out, calls = self.venv()
        self.assertEqual(
            ['-m pip install -q --upgrade pip',
             '-m pip install --progress-bar off -c %s -r requirements.txt '
             '-e %s' % (CONSTRAINTS, self.top.rstrip('/'))], calls)
        self.assertIn('==> installing what cyborg needs to run', out)
        self.assertEqual([], self.venv()[1])

    def test_run_tests_then_adds_only_the_test_requirements(self):
        self.venv()
        out, calls = self.venv('test')
        # And cyborg again, last: python-cyborgclient's "cyborg" console
        # script would replace cyborg's.
        self.assertEqual(['-m pip install --progress-bar off -c %s '
                          '-r requirements.txt -r test-requirements.txt'
                          % CONSTRAINTS,
                          '-m pip install --progress-bar off -c %s '
                          '--no-deps -e %s'
                          % (CONSTRAINTS, self.top.rstrip('/'))], calls)
        self.assertIn('==> installing what the tests need', out)
        self.assertEqual([], self.venv('test')[1])

    def test_a_test_venv_needs_nothing_more_to_run(self):
        self.venv('test')
        self.assertEqual([], self.venv()[1])

    def test_changed_requirements_are_installed_again(self):
        self.venv('test')
        self.write('requirements.txt', 'more\n')
        self.assertEqual(2, len(self.venv()[1]))
        self.assertEqual(2, len(self.venv('test')[1]))

    def _earlier_stamp(self):
        # The earlier script wrote one stamp: the hash of all three files.
        stamp = subprocess.run(
            ['bash', '-c', '. "$1"; cd "$2"; cyborg_hash requirements.txt '
             'test-requirements.txt setup.cfg', 'hash',
             os.path.join(TOP, 'tools', 'lib', 'venv.sh'), self.top],
            check=True, capture_output=True, text=True).stdout
        self.write('.venv/.cyborg-installed', stamp)

    def test_a_venv_stamped_by_the_earlier_script_is_kept_without_constraints(
            self):
        self.env['CYBORG_CONSTRAINTS'] = 'none'
        self._earlier_stamp()
        self.assertEqual([], self.venv()[1])
        self.assertEqual([], self.venv('test')[1])

    def test_a_venv_installed_without_constraints_is_installed_again(self):
        self._earlier_stamp()
        out, calls = self.venv('test')
        self.assertEqual(4, len(calls))
        self.assertTrue(all(' -c %s ' % CONSTRAINTS in call
                            for call in calls[1:]), calls)

    def test_other_constraints_install_again_and_none_installs_without(self):
        self.venv('test')
        self.write('tools/lib/constraints/older.txt', 'foo===0.9\n')
        self.env['CYBORG_CONSTRAINTS'] = os.path.join(
            self.top, 'tools/lib/constraints/older.txt')
        out, calls = self.venv('test')
        self.assertEqual(4, len(calls))
        self.assertIn(' -c tools/lib/constraints/older.txt ', calls[1])
        self.assertIn('==> installing with the constraints of', out)
        self.assertEqual([], self.venv('test')[1])
        self.env['CYBORG_CONSTRAINTS'] = 'none'
        calls = self.venv('test')[1]
        self.assertEqual(4, len(calls))
        self.assertNotIn(' -c ', ' '.join(calls))

    def test_a_missing_constraints_file_is_refused_by_name(self):
        self.env['CYBORG_CONSTRAINTS'] = '/nonexistent/uc.txt'
        process = subprocess.run(
            ['bash', '-c', '. "$1"; cyborg_venv "$2"', 'venv',
             os.path.join(TOP, 'tools', 'lib', 'venv.sh'), self.top],
            capture_output=True, text=True, env=self.env)
        self.assertEqual(1, process.returncode)
        self.assertIn('CYBORG_CONSTRAINTS names /nonexistent/uc.txt, which '
                      'is not a file', process.stderr)
        self.assertFalse(os.path.exists(
            os.path.join(self.top, '.venv', 'pip.log')))
