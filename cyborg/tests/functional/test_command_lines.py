"""Every console script as an operator first meets it: its --help, its
usage, and its configuration mistakes, each said in one line."""

import os
import subprocess
import sys

import fixtures
import testtools

from cyborg.tests.functional import daemons

SCRIPTS = ('api', 'conductor', 'agent', 'aio', 'dbsync', 'status', 'cli')

# What each --help says the command is.
DESCRIPTIONS = {
    'api': "Run cyborg's REST API",
    'conductor': "Run cyborg's conductor",
    'agent': "Run cyborg's agent",
    'aio': 'Run cyborg whole in one process',
    'dbsync': 'Create, upgrade and inspect the cyborg database',
    'status': 'Check that this deployment is ready',
    'cli': 'Administer the accelerators of an OpenStack cloud',
}


def run(name, *args):
    """Run ``python -m cyborg.cmd.<name> args``; (status, stdout,
    stderr)."""
    done = subprocess.run([sys.executable, '-m', 'cyborg.cmd.%s' % name]
                          + list(args), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    return done.returncode, done.stdout, done.stderr


class CommandLineTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def config(self, text):
        path = os.path.join(self.tmp, 'cyborg.conf')
        with open(path, 'w') as f:
            f.write(text)
        return path

    def assertConfigError(self, result, line):
        """Exit status 2 and ``line`` as the only line on stderr."""
        status, _out, err = result
        self.assertEqual((2, [line]), (status, err.splitlines()), err)

    def test_help_says_what_each_command_is(self):
        for name in SCRIPTS:
            status, out, err = run(name, '--help')
            self.assertEqual(0, status, err)
            self.assertIn(DESCRIPTIONS[name], ' '.join(out.split()), name)
            if name != 'cli':
                self.assertIn('--config-file', out, name)

    def test_aio_usage_lists_its_own_options(self):
        status, _out, err = run('aio', '--prot', '1')
        self.assertEqual(2, status)
        for option in ('--host', '--port', '--state-dir', '--sysfs-root',
                       '--config-file'):
            self.assertIn(option, err)
        self.assertIn('cyborg-aio: error: unrecognized arguments: --prot 1',
                      err)

    def test_aio_port_out_of_range_names_the_option(self):
        self.assertConfigError(
            run('aio', '--port', '99999', '--state-dir', self.tmp),
            'cyborg-aio: error: argument --port: Invalid Port(min=0, '
            'max=65535) value: 99999')

    def test_aio_unwritable_state_dir_names_the_option(self):
        blocker = os.path.join(self.tmp, 'file')
        with open(blocker, 'w'):
            pass
        state_dir = os.path.join(blocker, 'state')
        status, _out, err = run('aio', '--state-dir', state_dir)
        self.assertEqual(2, status)
        self.assertEqual(
            ['cyborg-aio: error: --state-dir %s: cannot write %s: Not a '
             'directory' % (state_dir, state_dir)], err.splitlines())

    def test_missing_config_file(self):
        missing = os.path.join(self.tmp, 'missing.conf')
        self.assertConfigError(
            run('conductor', '--config-file', missing),
            'cyborg-conductor: error: --config-file %s: no such file'
            % missing)

    def test_ini_syntax_error(self):
        path = self.config('[agent]\nheartbeat_interval = 3\n[DEFAULT\n')
        self.assertConfigError(
            run('agent', '--config-file', path),
            "cyborg-agent: error: %s: line 3, Invalid section (must end "
            "with ]): '[DEFAULT'" % path)

    def test_bad_value_is_found_before_the_api_listens(self):
        port = daemons.free_port()
        path = self.config('[api]\nport = %d\n[agent]\nheartbeat_interval '
                           '= often\n' % port)
        self.assertConfigError(
            run('api', '--config-file', path),
            "cyborg-api: error: [agent] heartbeat_interval in %s: invalid "
            "literal for int() with base 10: 'often'" % path)

    def test_unknown_options_are_warned_by_name(self):
        path = self.config('[database]\nconnection = sqlite:///%s/c.sqlite\n'
                           '[agent]\nheartbeat_intervall = 3\n' % self.tmp)
        status, out, err = run('dbsync', '--config-file', path, 'version')
        # The log goes where [DEFAULT] use_stderr and log_file say.
        self.assertEqual((0, 'None'), (status, out.splitlines()[-1]), err)
        self.assertIn('they are ignored: [agent] heartbeat_intervall',
                      out + err)
        status, out, err = run('status', '--config-file', path, 'upgrade',
                               'check')
        self.assertIn('heartbeat_intervall', ' '.join(out.split()))

    def test_a_misspelled_group_stops_every_daemon(self):
        path = self.config('[agent]\nheartbeat_interval = 3\n'
                           '[oslo_messaging_rabit]\nssl = true\n')
        for name in ('agent', 'dbsync'):
            self.assertConfigError(
                run(name, '--config-file', path, *(
                    ['version'] if name == 'dbsync' else [])),
                'cyborg-%s: error: %s: [oslo_messaging_rabit] is not a group '
                'cyborg knows: did you mean [oslo_messaging_rabbit]? Its '
                'options are not read until it is renamed' % (name, path))

    def test_another_services_group_is_a_warning_naming_its_file(self):
        path = self.config('[database]\nconnection = sqlite:///%s/c.sqlite\n'
                           '[libvirt]\nvirt_type = kvm\n' % self.tmp)
        status, out, err = run('dbsync', '--config-file', path, 'version')
        self.assertEqual((0, 'None'), (status, out.splitlines()[-1]), err)
        self.assertIn('they are ignored: [libvirt] in %s (a group cyborg '
                      'does not know; the nearest it knows is [' % path,
                      out + err)
