"""cyborg-status upgrade checks, each on its own, on SQLite."""

import inspect
import io
import os
import re

import fixtures
from oslo_policy import opts as policy_opts
from oslo_utils import timeutils
from oslo_utils import uuidutils
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from cyborg.cmd import status
from cyborg.common.clients import placement as placement_client
from cyborg.common import keys
from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import placement_fixture

Code = upgradecheck.Code


class _StatusTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(
            cyborg_fixtures.Database(self, 'sqlite', schema=None))
        # The fixture already points the engine at its database; the real
        # configure() would refuse once an earlier test started the engine.
        self.useFixture(fixtures.MockPatchObject(db_api, 'configure'))
        self.checks = status.Checks(self.conf)


class DatabaseSchemaCheckTest(_StatusTestCase):

    def test_empty_database_fails_with_the_command_to_run(self):
        result = self.checks._check_database_schema()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('no cyborg schema', result.details)
        self.assertIn('cyborg-dbsync upgrade', result.details)

    def test_database_at_head_succeeds(self):
        migration.upgrade('head')
        self.assertEqual(Code.SUCCESS,
                         self.checks._check_database_schema().code)

    def test_database_at_another_revision_fails(self):
        migration.upgrade('head')
        with self.db.engine.begin() as connection:
            connection.execute(sa.text(
                "UPDATE alembic_version SET version_num = 'older0000000'"))
        result = self.checks._check_database_schema()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('older0000000', result.details)
        self.assertIn(migration.head(), result.details)
        self.assertIn('cyborg-dbsync upgrade', result.details)

    def test_unreachable_database_fails(self):
        bad = sa.create_engine('sqlite:////nonexistent-dir/cyborg.sqlite')
        self.addCleanup(bad.dispose)
        self.useFixture(fixtures.MockPatchObject(
            db_api, 'get_engine', return_value=bad))
        result = self.checks._check_database_schema()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('Cannot read the database', result.details)
        self.assertIn('unable to open database file', result.details)


class PolicyFileCheckTest(_StatusTestCase):

    def use_policy_file(self, content):
        policy_opts.set_defaults(self.conf)
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'policy-file')
        with open(path, 'w') as f:
            f.write(content)
        self.flags(policy_file=path, group='oslo_policy')

    def test_json_policy_file_fails(self):
        self.use_policy_file('{"admin_api": "role:admin"}')
        self.assertEqual(Code.FAILURE, self.checks._check_policy_file().code)

    def test_yaml_policy_file_succeeds(self):
        self.use_policy_file('"admin_api": "role:admin"\n')
        self.assertEqual(Code.SUCCESS, self.checks._check_policy_file().code)

    def test_no_policy_file_succeeds(self):
        policy_opts.set_defaults(self.conf)
        self.flags(policy_file='/nonexistent/policy.yaml', group='oslo_policy')
        self.assertEqual(Code.SUCCESS, self.checks._check_policy_file().code)


class EnabledDriversCheckTest(_StatusTestCase):

    def test_installed_drivers_succeed(self):
        self.flags(enabled_drivers=['fake_driver'], group='agent')
        self.assertEqual(Code.SUCCESS,
                         self.checks._check_enabled_drivers().code)

    def test_no_enabled_drivers_succeeds(self):
        self.flags(enabled_drivers=[], group='agent')
        self.assertEqual(Code.SUCCESS,
                         self.checks._check_enabled_drivers().code)

    def test_unknown_driver_warns_by_name(self):
        self.flags(enabled_drivers=['fake_driver', 'no_such_driver'],
                   group='agent')
        result = self.checks._check_enabled_drivers()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('no_such_driver', result.details)
        self.assertIn('Installed drivers: fake_driver', result.details)


class PlacementCheckTest(_StatusTestCase):
    """Against the real Placement service the all-in-one embeds."""

    def test_reachable_placement_succeeds(self):
        self.useFixture(placement_fixture.Placement(self.conf))
        result = self.checks._check_placement()
        self.assertEqual(Code.SUCCESS, result.code, result.details)

    def test_unreachable_placement_fails(self):
        placement = self.useFixture(placement_fixture.Placement(self.conf))
        with placement.down():
            result = self.checks._check_placement()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('[placement]', result.details)

    def test_old_placement_fails_with_what_is_needed(self):
        result = status._placement_version_result(
            {'versions': [{'id': 'v1.0', 'max_version': '1.10'}]})
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('1.10', result.details)
        self.assertIn('1.26', result.details)

    def test_garbage_version_document_fails(self):
        for document in ({}, {'versions': [{}]},
                         {'versions': [{'max_version': 'one'}]}):
            result = status._placement_version_result(document)
            self.assertEqual(Code.FAILURE, result.code, document)

    def test_minimum_covers_what_the_client_asks_for(self):
        source = inspect.getsource(placement_client)
        optional = set(placement_client.OPTIONAL_VERSIONS)
        asked = {tuple(int(n) for n in v.split('.'))
                 for v in re.findall(r"'1\.(\d+)'", source)
                 for v in ['1.' + v] if v not in optional}
        self.assertTrue(asked)
        self.assertEqual(max(asked), status.PLACEMENT_MIN_VERSION)


class RPCKeysCheckTest(_StatusTestCase):

    def setUp(self):
        super().setUp()
        self.key_dir = self.useFixture(fixtures.TempDir()).path
        self.flags(key_dir=self.key_dir, group='security')

    def test_a_missing_api_key_fails_with_the_command_to_run(self):
        result = self.checks._check_rpc_keys()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('cyborg-status keys create --api', result.details)

    def test_unsigned_messages_accepted_are_a_warning(self):
        self.flags(require_signed=False, group='security')
        self.assertEqual(Code.WARNING, self.checks._check_rpc_keys().code)
        keys.create(self.key_dir, keys.API)
        result = self.checks._check_rpc_keys()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('require_signed is False', result.details)

    def test_the_api_key_signed_messages_succeed(self):
        keys.create(self.key_dir, keys.API)
        self.assertEqual(Code.SUCCESS, self.checks._check_rpc_keys().code)


class ComputeNodeNamesCheckTest(_StatusTestCase):
    """Each agent's host names a compute node provider in Placement."""

    def setUp(self):
        super().setUp()
        migration.upgrade('head')
        self.placement = self.useFixture(placement_fixture.Placement(
            self.conf))
        # One Placement serves the process: names of this test's own.
        self.short = 'cmp-%s' % uuidutils.generate_uuid()[:8]
        self.fqdn = self.short + '.example.org'

    def host(self, hostname, resource_provider_name=None):
        with self.db.engine.begin() as connection:
            connection.execute(models.Host.__table__.insert().values(
                hostname=hostname, status='up', last_seen_at=timeutils.
                utcnow(), resource_provider_name=resource_provider_name))

    def compute_node(self, name):
        """A compute node provider as Nova makes it (COMPUTE_NODE)."""
        provider = self.placement.create_compute_node(name,
                                                      remove_after=True)
        placement_client.set_traits(self.placement.client, provider['uuid'],
                                    provider['generation'], ['COMPUTE_NODE'])

    def test_no_hosts_succeeds(self):
        self.assertEqual(Code.SUCCESS,
                         self.checks._check_compute_node_names().code)

    def test_a_host_found_by_its_agents_host_succeeds(self):
        self.host(self.short)
        self.compute_node(self.short)
        self.assertEqual(Code.SUCCESS,
                         self.checks._check_compute_node_names().code)

    def test_a_host_found_by_its_provider_name_succeeds(self):
        self.host(self.short, self.fqdn)
        self.compute_node(self.fqdn)
        self.assertEqual(Code.SUCCESS,
                         self.checks._check_compute_node_names().code)

    def test_a_provider_without_the_compute_node_trait_is_found(self):
        self.host(self.short, self.fqdn)
        self.placement.create_compute_node(self.fqdn, remove_after=True)
        self.assertEqual(Code.SUCCESS,
                         self.checks._check_compute_node_names().code)

    def test_a_host_under_another_form_of_its_name_warns(self):
        # The agent's host is the short name and it gave no provider
        # name, Nova's node name is the FQDN.
        self.host(self.short)
        self.compute_node(self.fqdn)
        result = self.checks._check_compute_node_names()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('%s (names %s), Placement has compute node %s'
                      % (self.short, self.short, self.fqdn), result.details)
        self.assertIn('[agent] resource_provider_name', result.details)

    def test_a_host_no_compute_node_names_warns(self):
        self.host(self.fqdn, 'node-%s' % self.short)
        result = self.checks._check_compute_node_names()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('%s (names %s, node-%s).' % (
            self.fqdn, self.fqdn, self.short), result.details)

    def test_unreachable_placement_fails(self):
        self.host(self.short)
        with self.placement.down():
            result = self.checks._check_compute_node_names()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('Cannot compare the hosts with Placement',
                      result.details)


class AllChecksTest(_StatusTestCase):
    """``check()`` runs every check and answers the worst code."""

    def setUp(self):
        super().setUp()
        key_dir = self.useFixture(fixtures.TempDir()).path
        keys.create(key_dir, keys.API)
        self.flags(key_dir=key_dir, group='security')
        self.useFixture(placement_fixture.Placement(self.conf))
        self.stdout = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', self.stdout))

    def test_empty_database_is_a_failure(self):
        self.assertEqual(Code.FAILURE, self.checks.check())
        self.assertIn('Database schema', self.stdout.getvalue())

    def test_upgraded_database_with_unknown_driver_is_a_warning(self):
        migration.upgrade('head')
        self.flags(enabled_drivers=['no_such_driver'], group='agent')
        self.assertEqual(Code.WARNING, self.checks.check())

    def test_upgraded_database_is_a_success(self):
        migration.upgrade('head')
        self.assertEqual(Code.SUCCESS, self.checks.check())
        for name in ('Database schema', 'Policy File JSON to YAML Migration',
                     'Enabled accelerator drivers', 'Placement API',
                     'Compute node names', 'RPC keys'):
            self.assertIn(name, self.stdout.getvalue())


class ConfigurationCheckTest(base.TestCase):
    """What the daemons would warn about or refuse, on a ConfigOpts of
    the options of the agent."""

    def checks(self, text):
        from oslo_config import cfg

        from cyborg.conf import agent as agent_conf
        from cyborg.conf import default as default_conf
        conf = cfg.ConfigOpts()
        default_conf.register_opts(conf)
        agent_conf.register_opts(conf)
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'cyborg.conf')
        with open(path, 'w') as f:
            f.write(text)
        conf(['--config-file', path], default_config_files=[])
        return status.Checks(conf), path

    def test_unknown_options_are_a_warning_naming_them(self):
        checks, _path = self.checks('[agent]\nheartbeat_intervall = 3\n')
        result = checks._check_configuration()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('[agent] heartbeat_intervall', result.details)

    def test_bad_values_are_a_failure_naming_them(self):
        checks, path = self.checks('[agent]\nheartbeat_interval = 0\n')
        result = checks._check_configuration()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertEqual('[agent] heartbeat_interval in %s: Should be greater '
                         'than or equal to 1' % path, result.details)

    def test_a_clean_configuration_succeeds(self):
        checks, _path = self.checks('[agent]\nheartbeat_interval = 3\n')
        self.assertEqual(Code.SUCCESS, checks._check_configuration().code)
