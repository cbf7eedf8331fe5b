"""The configuration, checked before anything starts."""

import os

import fixtures
from oslo_config import cfg
from oslo_config import generator

from cyborg.common import config_check
from cyborg.conf import agent as agent_conf
from cyborg.conf import default as default_conf
from cyborg.conf import opts as conf_opts
from cyborg.conf import services as services_conf
from cyborg.tests import base

TOP = os.path.join(os.path.dirname(__file__), '..', '..', '..')


class ConfigCheckTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.conf = cfg.ConfigOpts()
        for module in (default_conf, agent_conf, services_conf):
            module.register_opts(self.conf)

    def write(self, text, name='cyborg.conf'):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def parse(self, text):
        path = self.write(text)
        config_check.parse(self.conf, ['--config-file', path],
                           default_config_files=[])
        return path

    def test_a_missing_file_is_one_line(self):
        missing = os.path.join(self.tmp, 'nope.conf')
        error = self.assertRaises(
            config_check.ConfigError, config_check.parse, self.conf,
            ['--config-file', missing], default_config_files=[])
        self.assertEqual('--config-file %s: no such file' % missing,
                         str(error))

    def test_a_bad_command_line_value_names_the_option(self):
        self.conf.register_cli_opt(cfg.PortOpt('port'))
        stderr = self.useFixture(fixtures.StringStream('stderr'))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', stderr.stream))
        error = self.assertRaises(
            config_check.ConfigError, config_check.parse, self.conf,
            ['--port', '99999'], default_config_files=[])
        self.assertEqual('argument --port: Invalid Port(min=0, max=65535) '
                         'value: 99999', str(error))
        self.assertEqual('', stderr.getDetails()['stderr'].as_text())

    def test_a_syntax_error_names_the_file_and_line(self):
        path = self.write('[agent]\nheartbeat_interval = 3\n[DEFAULT\n')
        error = self.assertRaises(
            config_check.ConfigError, config_check.parse, self.conf,
            ['--config-file', path], default_config_files=[])
        self.assertEqual("%s: line 3, Invalid section (must end with ]): "
                         "'[DEFAULT'" % path, str(error))

    def test_a_bad_value_names_the_option_and_the_file(self):
        path = self.parse('[agent]\nheartbeat_interval = 0\n'
                          'rescan_interval = x\n')
        self.assertEqual(
            ['[agent] heartbeat_interval in %s: Should be greater than or '
             'equal to 1' % path,
             "[agent] rescan_interval in %s: invalid literal for int() with "
             "base 10: 'x'" % path], config_check.bad_values(self.conf))
        error = self.assertRaises(config_check.ConfigError,
                                  config_check.check, self.conf)
        self.assertTrue(str(error).endswith(' (and 1 more)'), error)
        self.assertNotIn('\n', str(error))

    def test_a_substitution_of_nothing_names_the_option(self):
        self.parse('[agent]\nstate_file = $nowhere/state.json\n')
        [problem] = config_check.bad_values(self.conf)
        self.assertTrue(problem.startswith('[agent] state_file: '), problem)
        self.assertIn('nowhere', problem)

    def test_good_values_pass(self):
        self.parse('[agent]\nheartbeat_interval = 5\n')
        self.assertEqual([], config_check.bad_values(self.conf))
        config_check.check(self.conf)

    def test_misspelled_options_and_unknown_groups_are_named(self):
        path = self.parse('[DEFAULT]\nhots = a\n'
                          '[agent]\nheartbeat_intervall = 3\n'
                          'heartbeat_interval = 3\n[bogus]\nx = 1\n')
        found = config_check.unknown_options(self.conf)
        # Any group may be a NIC type's ([<nic_type>]), but [bogus] sets
        # none of a NIC type's options: it is unknown as a whole.
        self.assertEqual([('DEFAULT', 'hots'),
                          ('agent', 'heartbeat_intervall'), ('bogus', None)],
                         sorted(found))
        described = config_check.describe_unknown(sorted(found))
        self.assertEqual(
            '[DEFAULT] hots in %(path)s (did you mean host?), [agent] '
            'heartbeat_intervall in %(path)s (did you mean '
            'heartbeat_interval?), [bogus] in %(path)s (a group cyborg does '
            'not know; the nearest it knows is [%(nearest)s])' % {
                'path': path, 'nearest': sorted(found)[2].nearest},
            described)
        self.assertNotIn('\n', described)

    def test_a_nic_type_group_is_named_by_its_unknown_options(self):
        self.parse('[x710_static]\nphysical_device_mappings = p:eth2\n'
                   'function_device_mapping = GTPv1:eth2\n')
        self.assertEqual([('x710_static', 'function_device_mapping')],
                         config_check.unknown_options(self.conf))
        config_check.check(self.conf)

    def test_a_near_miss_of_a_known_group_is_refused(self):
        path = self.parse('[databse]\nconnection = mysql+pymysql://c@db/c\n'
                          '[keystone-authtoken]\nauth_type = password\n')
        error = self.assertRaises(config_check.ConfigError,
                                  config_check.check, self.conf)
        self.assertEqual(
            '%s: [databse] is not a group cyborg knows: did you mean '
            '[database]? Its options are not read until it is renamed (and '
            '1 more)' % path, str(error))

    def test_a_group_in_another_case_is_read_as_oslo_config_reads_it(self):
        # oslo.config reads [Database] as [database].
        self.parse('[Database]\nconnection = sqlite://\n')
        self.assertEqual([], config_check.unknown_options(self.conf))
        config_check.check(self.conf)

    def test_a_group_near_no_known_one_is_only_named(self):
        # Another service's group, in a file shared with it: a warning.
        path = self.parse('[libvirt]\nvirt_type = kvm\n')
        config_check.check(self.conf)
        [entry] = config_check.unknown_options(self.conf)
        self.assertEqual(('libvirt', None, path),
                         (entry[0], entry[1], entry.file))
        self.assertIsNotNone(entry.nearest)

    def test_near_misses(self):
        groups = ['DEFAULT', 'api', 'aio', 'database', 'pci', 'nova',
                  'keystone_authtoken', 'oslo_messaging_rabbit',
                  'oslo_messaging_kafka', 'vgpu_<type>', 'security']
        for name, meant in (('databse', 'database'), ('datbase', 'database'),
                            ('keystone_authtokn', 'keystone_authtoken'),
                            ('keystoneauthtoken', 'keystone_authtoken'),
                            ('Keystone-Authtoken', 'keystone_authtoken'),
                            ('oslo_messaging_rabit', 'oslo_messaging_rabbit'),
                            ('secuirty', 'security'), ('default', 'DEFAULT'),
                            # Short names are names of their own.
                            ('apis', None), ('nova_', 'nova'), ('rdp', None),
                            ('vnc', None), ('sql', None),
                            # Other services' groups.
                            ('api_database', None), ('neutron', None),
                            ('oslo_messaging_amqp', None),
                            ('placement_database', None), ('vgpu_t', None)):
            self.assertEqual(meant, config_check.near_miss(name, groups),
                             name)

    def test_edit_distance_counts_a_swap_as_one(self):
        self.assertEqual(
            [0, 1, 1, 1, 1, 3],
            [config_check.edit_distance(a, b) for a, b in (
                ('agent', 'agent'), ('agnet', 'agent'), ('agen', 'agent'),
                ('agents', 'agent'), ('agant', 'agent'), ('', 'api'))])

    def test_a_group_no_namespace_knows_is_named_whole(self):
        self.parse('[bogus]\nx = 1\n')
        self.assertEqual([('bogus', None)], config_check.unknown_options(
            self.conf, known={'agent': {'x'}}))
        self.assertEqual('[bogus]', config_check.describe_unknown(
            [('bogus', None)]))

    def test_options_of_other_daemons_and_libraries_are_known(self):
        # Neither registered here: [keystone_authtoken] is the API's,
        # [database] the conductor's; the namespaces know them.
        self.parse('[keystone_authtoken]\nwww_authenticate_uri = http://k\n'
                   'auth_type = password\nusername = cyborg\n'
                   '[database]\nconnection = sqlite://\n'
                   '[oslo_messaging_rabbit]\nrabbit_ha_queues = true\n'
                   '[vgpu_nvidia-35]\ndevice_addresses = 0000:84:00.0\n')
        self.assertEqual([], config_check.unknown_options(self.conf))

    def test_options_of_the_auth_plugin_a_group_names_are_known(self):
        self.parse('[nova]\nauth_type = password\nusername = nova\n'
                   'auth_url = http://k\n'
                   '[placement]\nauth_type = admin_token\ntoken = t\n'
                   'endpoint = http://p\ntokn = x\n')
        self.assertEqual([('placement', 'tokn')],
                         config_check.unknown_options(self.conf))

    def test_a_namespace_that_fails_to_load_is_left_out(self):
        list_opts = generator._list_opts

        def failing(namespaces):
            if namespaces == ['broken']:
                raise ImportError('no module named broken')
            return list_opts(namespaces)
        self.useFixture(fixtures.MonkeyPatch(
            'oslo_config.generator._list_opts', failing))
        known = config_check.known_options(['broken', 'cyborg'])
        self.assertIn('heartbeat_interval', known['agent'])

    def test_registered_options_need_no_namespace(self):
        self.parse('[agent]\nheartbeat_interval = 3\n')
        self.assertEqual([], config_check.unknown_options(self.conf,
                                                          known={}))

    def test_namespaces_are_those_of_the_sample_generator(self):
        with open(os.path.join(TOP, 'etc', 'cyborg',
                               'cyborg-config-generator.conf')) as f:
            text = f.read()
        namespaces = [line.split('=', 1)[1].strip()
                      for line in text.splitlines()
                      if line.startswith('namespace')]
        self.assertEqual(namespaces, list(conf_opts.NAMESPACES))
