"""The configuration options: the sample file and a few defaults."""

import os
import re

import fixtures
from oslo_config import cfg
from oslo_config import generator
import testtools

from cyborg.conf import agent
from cyborg.conf import api
from cyborg.conf import database
from cyborg.conf import default
from cyborg.conf import opts as conf_opts

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                   '..'))
GENERATOR_CONF = os.path.join(TOP, 'etc', 'cyborg',
                              'cyborg-config-generator.conf')

_GROUP = re.compile(r'^\[(?P<group>[^\]]+)\]$')
_OPTION = re.compile(r'^#(?P<name>[\w-]+) =( |$)')


def _options_by_group(sample_text):
    """{group: {option names}} of a sample written by the generator."""
    found = {}
    group = None
    for line in sample_text.splitlines():
        match = _GROUP.match(line)
        if match:
            group = found.setdefault(match.group('group'), set())
            continue
        match = _OPTION.match(line)
        if match and group is not None:
            group.add(match.group('name'))
    return found


class TestSampleConfig(testtools.TestCase):

    def test_generator_writes_every_cyborg_option(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        sample = os.path.join(tmp, 'cyborg.conf.sample')
        generator.main(['--config-file', GENERATOR_CONF,
                        '--output-file', sample])
        with open(sample) as f:
            written = _options_by_group(f.read())

        missing = []
        for group, opts in conf_opts.list_opts():
            for opt in opts:
                if opt.dest not in written.get(group, ()):
                    missing.append('[%s] %s' % (group, opt.dest))
        self.assertEqual([], missing)

    def test_option_names_are_unique_in_each_group(self):
        for group, opts in conf_opts.list_opts():
            names = [opt.dest for opt in opts]
            self.assertEqual(len(names), len(set(names)), group)


class TestDefaults(testtools.TestCase):
    """Defaults as registered, before any test or deployment changes them."""

    def setUp(self):
        super().setUp()
        self.conf = cfg.ConfigOpts()
        for module in (default, api, agent, database):
            module.register_opts(self.conf)

    def _parse(self, *args):
        self.conf(list(args), project='cyborg', default_config_files=[])

    def test_api_listens_on_6666(self):
        self._parse()
        self.assertEqual('127.0.0.1', self.conf.api.host_ip)
        self.assertEqual(6666, self.conf.api.port)

    def test_agent_loads_the_fake_driver(self):
        self._parse()
        self.assertEqual(['fake_driver'], self.conf.agent.enabled_drivers)

    def test_auth_strategy_is_keystone(self):
        self._parse()
        self.assertEqual('keystone', self.conf.auth_strategy)

    def test_database_is_sqlite_under_state_path(self):
        self._parse()
        self.assertEqual('sqlite:////var/lib/cyborg/cyborg.sqlite',
                         self.conf.database.connection)

    def test_database_follows_state_path(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        config_file = os.path.join(tmp, 'cyborg.conf')
        with open(config_file, 'w') as f:
            f.write('[DEFAULT]\nstate_path = %s\n' % tmp)
        self._parse('--config-file', config_file)
        self.assertEqual('sqlite:///%s/cyborg.sqlite' % tmp,
                         self.conf.database.connection)


class LibraryDefaultsTest(testtools.TestCase):

    def test_service_tokens_need_a_service_role(self):
        conf_opts.set_lib_defaults()
        self.assertTrue(cfg.CONF.keystone_authtoken.
                        service_token_roles_required)
