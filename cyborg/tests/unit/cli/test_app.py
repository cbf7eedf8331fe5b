"""The ``cyborg`` command line's options and how it authenticates."""

import configparser
import io
import logging
import os

from cliff import show
import fixtures
from keystoneauth1 import access
from keystoneauth1 import fixture as ks_fixture
from keystoneauth1.identity import access as access_plugin
from keystoneauth1 import session as ks_session
import testtools
import yaml

from cyborg.cli import app
from cyborg.cli import client

CLOUDS_YAML = '''
clouds:
  aio:
    auth_type: admin_token
    auth:
      endpoint: http://aio.example:6666/v2
      token: admin
  keystone:
    auth:
      auth_url: http://keystone.example:5000/v3
'''


class _CliTest(testtools.TestCase):
    """No OS_* variable or clouds.yaml of the machine reaches the tests."""

    def setUp(self):
        super().setUp()
        home = self.useFixture(fixtures.TempDir()).path
        for name in [n for n in os.environ if n.startswith('OS_')]:
            self.useFixture(fixtures.EnvironmentVariable(name))
        self.useFixture(fixtures.EnvironmentVariable('HOME', home))
        self.clouds = os.path.join(home, 'clouds.yaml')
        with open(self.clouds, 'w') as f:
            f.write(CLOUDS_YAML)
        self.useFixture(fixtures.EnvironmentVariable('OS_CLIENT_CONFIG_FILE',
                                                     self.clouds))
        # cliff adds a console handler to the root logger on each run.
        root = logging.getLogger()
        self.addCleanup(setattr, root, 'handlers', list(root.handlers))
        self.addCleanup(root.setLevel, root.level)

    def parse(self, *argv):
        """The global options and the command's argv, as run() sees them."""
        cyborg = app.CyborgApp()
        cyborg._argv = list(argv)
        parser = cyborg.build_option_parser(app.DESCRIPTION, '0')
        return parser.parse_known_args(list(argv))

    def run_app(self, *argv):
        """(exit code, stdout, stderr) of the application run in process."""
        out, err = io.StringIO(), io.StringIO()
        code = app.CyborgApp(stdout=out, stderr=err).run(list(argv))
        return code, out.getvalue(), err.getvalue()


class OptionsTest(_CliTest):

    def test_endpoint_option_and_variable(self):
        options, rest = self.parse('--os-endpoint', 'http://a:1',
                                   'host-list')
        self.assertEqual('http://a:1', options.os_endpoint)
        self.assertEqual(['host-list'], rest)
        self.useFixture(fixtures.EnvironmentVariable('OS_ENDPOINT',
                                                     'http://b:2'))
        self.assertEqual('http://b:2', self.parse()[0].os_endpoint)

    def test_noauth_user_with_any_auth_type(self):
        options, rest = self.parse('--os-auth-type', 'admin_token',
                                   '--os-endpoint', 'http://a:1',
                                   '--os-username', 'bob', 'host-list')
        self.assertEqual(['host-list'], rest)
        self.assertEqual('bob', app.noauth_token(options))

    def test_auth_plugin_that_has_an_endpoint_option_keeps_it(self):
        options, _rest = self.parse('--os-auth-type', 'admin_token',
                                    '--os-endpoint', 'http://a:1',
                                    '--os-token', 'secret')
        self.assertEqual(('http://a:1', 'secret'),
                         (options.os_endpoint, options.os_token))

    def test_command_timeout_is_not_the_http_timeout(self):
        options, rest = self.parse('--os-timeout', '7', 'discover-services',
                                   '--timeout', '5')
        self.assertEqual(7.0, options.timeout)
        self.assertEqual(['discover-services', '--timeout', '5'], rest)

    def test_command_options_are_not_abbreviations_of_global_ones(self):
        _options, rest = self.parse('accelerator-attach', 'u',
                                    '--ins', 'i')
        self.assertEqual(['accelerator-attach', 'u', '--ins', 'i'], rest)

    def test_every_proposal_command_exists(self):
        names = {name for name, _cmd in
                 app.CyborgApp().command_manager}
        self.assertTrue({
            'install-driver', 'uninstall-driver', 'update-driver',
            'driver-list', 'discover-services', 'service-list',
            'attach-instance', 'detach-instance', 'accelerator-list',
            'accelerator-show', 'accelerator-create', 'accelerator-update',
            'accelerator-attach', 'accelerator-detach',
            'host-list'}.issubset(names), names)


class NoauthTest(_CliTest):

    def test_endpoint_alone_is_noauth_as_admin(self):
        options, _rest = self.parse('--os-endpoint', 'http://a:1')
        self.assertTrue(app.uses_noauth(options))
        self.assertEqual('admin', app.noauth_token(options))

    def test_user_and_project(self):
        options, _rest = self.parse('--os-endpoint', 'http://a:1',
                                    '--os-username', 'bob')
        self.assertEqual('bob', app.noauth_token(options))
        options, _rest = self.parse('--os-endpoint', 'http://a:1',
                                    '--os-username', 'bob',
                                    '--os-project-id', 'p1')
        self.assertEqual('bob:p1', app.noauth_token(options))
        self.useFixture(fixtures.EnvironmentVariable('OS_USERNAME', 'eve'))
        self.assertEqual('eve', app.noauth_token(
            self.parse('--os-endpoint', 'http://a:1')[0]))

    def test_a_given_token_is_sent_as_it_is(self):
        options, _rest = self.parse('--os-endpoint', 'http://a:1',
                                    '--os-token', 'tok')
        self.assertEqual('tok', app.noauth_token(options))

    def test_keystone_credentials_or_a_cloud_mean_keystone(self):
        for argv in (('--os-auth-url', 'http://keystone:5000/v3'),
                     ('--os-cloud', 'aio')):
            options, _rest = self.parse('--os-endpoint', 'http://a:1',
                                        *argv)
            self.assertFalse(app.uses_noauth(options), argv)

    def test_noauth_client_sends_the_token_to_the_endpoint_root(self):
        options, _rest = self.parse('--os-endpoint', 'http://a:1/v2/',
                                    '--os-username', 'bob')
        made = app.make_client(options)
        self.assertEqual('http://a:1', made.root)
        self.assertEqual({'X-Auth-Token': 'bob'},
                         made.session.get_auth_headers())


class KeystoneTest(_CliTest):

    def test_cloud_from_clouds_yaml(self):
        options, _rest = self.parse('--os-cloud', 'aio')
        made = app.make_client(options)
        self.assertEqual('http://aio.example:6666', made.root)
        self.assertEqual({'X-Auth-Token': 'admin'},
                         made.session.get_auth_headers())

    def test_endpoint_overrides_the_cloud_endpoint(self):
        options, _rest = self.parse('--os-cloud', 'aio', '--os-endpoint',
                                    'http://other:1')
        self.assertEqual('http://other:1', app.make_client(options).root)

    def test_no_credentials_at_all(self):
        options, _rest = self.parse()
        e = self.assertRaises(client.CommandError, app.make_client, options)
        self.assertIn('auth_url', str(e))
        self.assertIn('--os-endpoint', str(e))

    def catalog_session(self, **endpoints):
        token = ks_fixture.V3Token()
        service = token.add_service('accelerator')
        service.add_standard_endpoints(region='RegionOne', **endpoints)
        auth = access_plugin.AccessInfoPlugin(
            access.create(body=token, auth_token='tok'))
        return ks_session.Session(auth=auth)

    def test_catalog_endpoint(self):
        session = self.catalog_session(public='http://ctl:6666/v2',
                                       internal='http://10.0.0.1:6666/v2')
        self.assertEqual('http://ctl:6666/v2',
                         app.catalog_endpoint(session))
        self.assertEqual('http://10.0.0.1:6666/v2',
                         app.catalog_endpoint(session, 'internal',
                                              'RegionOne'))

    def test_catalog_without_the_service(self):
        session = self.catalog_session(public='http://ctl:6666/v2')
        e = self.assertRaises(client.CommandError, app.catalog_endpoint,
                              session, 'public', 'RegionTwo')
        self.assertIn('no accelerator endpoint', str(e))
        self.assertIn('RegionTwo', str(e))


class RunTest(_CliTest):
    """Failures are one line on stderr and a non-zero exit."""

    def assertOneLine(self, text):
        self.assertEqual(1, len(text.strip().splitlines()), text)
        self.assertNotIn('Traceback', text)

    def test_missing_endpoint_and_credentials(self):
        code, out, err = self.run_app('accelerator-list')
        self.assertEqual((1, ''), (code, out))
        self.assertOneLine(err)
        self.assertIn('--os-endpoint', err)

    def test_unknown_cloud(self):
        code, _out, err = self.run_app('--os-cloud', 'nowhere', 'host-list')
        self.assertEqual(1, code)
        self.assertOneLine(err)
        self.assertIn('nowhere', err)

    def test_unknown_auth_type(self):
        code, _out, err = self.run_app('--os-auth-type', 'magic',
                                       'host-list')
        self.assertEqual(1, code)
        self.assertOneLine(err)

    def test_bad_spec_fails_before_any_request(self):
        # Nothing listens on port 9: a request would fail differently.
        code, _out, err = self.run_app(
            '--os-endpoint', 'http://127.0.0.1:9', 'accelerator-update',
            'u1', '--spec', '{"num": ')
        self.assertEqual(1, code)
        self.assertOneLine(err)
        self.assertIn('--spec is not valid JSON', err)

    def test_unreachable_endpoint(self):
        code, _out, err = self.run_app(
            '--os-endpoint', 'http://127.0.0.1:9', 'accelerator-list')
        self.assertEqual(1, code)
        self.assertOneLine(err)
        self.assertIn('Cannot connect to the accelerator service at '
                      'http://127.0.0.1:9', err)

    def test_debug_shows_the_traceback(self):
        code, _out, err = self.run_app(
            '--debug', '--os-endpoint', 'http://127.0.0.1:9',
            'accelerator-list')
        self.assertEqual(1, code)
        self.assertIn('Traceback', err)

    def test_help_needs_no_credentials(self):
        code, out, _err = self.run_app('help', 'attach-instance')
        self.assertEqual(0, code)
        self.assertIn('--device-profile', out)


class ConsoleScriptTest(testtools.TestCase):

    def test_declared_in_setup_cfg(self):
        setup_cfg = os.path.join(os.path.dirname(__file__), '..', '..', '..',
                                 '..', 'setup.cfg')
        parser = configparser.ConfigParser()
        parser.read(setup_cfg)
        scripts = parser['entry_points']['console_scripts'].split('\n')
        self.assertIn('cyborg = cyborg.cmd.cli:main', scripts)


class EmptyListTest(_CliTest):
    """An empty table is one line saying there is nothing; the machine
    formats stay what they are."""

    def answer(self, doc):
        response = type('Response', (), {'json': lambda self: doc})()
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.cli.client.Client.request',
            lambda *args, **kwargs: response))

    def test_hardware_not_offered(self):
        self.answer({'hardware': []})
        endpoint = ('--os-endpoint', 'http://aio.example:6666')
        self.assertEqual(
            (0, 'No PCI functions that are not offered.\n', ''),
            self.run_app(*endpoint, 'hardware-list', '--not-offered'))
        self.assertEqual(
            (0, 'No PCI functions on host cmp-1.\n', ''),
            self.run_app(*endpoint, 'hardware-list', '--host', 'cmp-1'))
        self.assertEqual((0, '[]\n', ''),
                         self.run_app(*endpoint, 'hardware-list',
                                      '--not-offered', '-f', 'json'))
        self.assertEqual((0, '', ''),
                         self.run_app(*endpoint, 'hardware-list',
                                      '-f', 'value'))

    def test_every_list(self):
        endpoint = ('--os-endpoint', 'http://aio.example:6666')
        for argv, doc, line in [
                (['host-list'], {'hosts': []},
                 'No hosts: no agent has said hello yet.'),
                (['driver-list', '--host', 'cmp-1'], {'drivers': []},
                 'No drivers on host cmp-1.'),
                (['service-list', '--type', 'GPU'], {'services': []},
                 'No acceleration services of type GPU.'),
                (['accelerator-list'], {'accelerators': []},
                 'No accelerators.')]:
            self.answer(doc)
            self.assertEqual((0, line + '\n', ''),
                             self.run_app(*endpoint, *argv), argv)


def _samples(path):
    """``(command line, [output lines])`` of each ``$ cyborg ...`` sample
    of the rst page ``path``; a line ending with a backslash goes on."""
    with open(path) as f:
        lines = f.read().splitlines()
    samples, current = [], None
    for line in lines:
        text = line.strip()
        if text.startswith('$ '):
            current = [text[2:], []]
            samples.append(current)
        elif current is None:
            continue
        elif not text:
            current = None
        elif current[0].endswith('\\') and not current[1]:
            current[0] = current[0][:-1].rstrip() + ' ' + text
        else:
            current[1].append(line)
    return [(c, out) for c, out in samples if c.startswith('cyborg ')]


class CliPageTest(testtools.TestCase):
    """The output samples of doc/source/admin/cli.rst have the shape
    cliff prints: mappings with their keys in order, one line per field
    of an object with ``-f value``."""

    PAGE = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..',
                        'doc', 'source', 'admin', 'cli.rst')

    def test_samples(self):
        samples = _samples(self.PAGE)
        self.assertGreater(len(samples), 5)
        commands = {name: cls for family in app.FAMILIES
                    for name, cls in family.COMMANDS.items()}
        for command, out in samples:
            words = command.split()
            if '-f' in words and words[words.index('-f') + 1] == 'yaml':
                for item in yaml.safe_load('\n'.join(out)) or []:
                    if isinstance(item, dict):
                        self.assertEqual(sorted(item), list(item), command)
            if ('-f' in words and words[words.index('-f') + 1] == 'value'
                    and issubclass(commands[words[1]], show.ShowOne)):
                self.assertEqual(words.count('-c'), len(out), command)
