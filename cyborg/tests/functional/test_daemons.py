"""cyborg-conductor and cyborg-agent as separate processes on RabbitMQ and
a real database, the way a deployment runs them."""

import os

import fixtures

from cyborg.common import context
from cyborg.db import hosts as db_hosts
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests import services
from cyborg.tests.functional import daemons
from cyborg.tests.functional.test_hello import wait_for


class _DaemonTests:

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.transport_url = services.require(self, 'rabbit')
        self.db = self.useFixture(cyborg_fixtures.Database(
            self, self.backend, schema=self.schema))
        self.ctx = context.get_admin_context()

    schema = 'migrations'

    def config(self, name, host, **sections):
        values = {
            'DEFAULT': {'host': host, 'transport_url': self.transport_url,
                        'rpc_topic_prefix': 'test-%s-' % os.path.basename(
                            self.tmp)},
            'database': {'connection': self.db.url},
            'agent': {'heartbeat_interval': 1},
            'conductor': {'host_down_timeout': 3,
                          'liveness_check_interval': 1},
        }
        for section, options in sections.items():
            values.setdefault(section, {}).update(options)
        return daemons.write_config(os.path.join(self.tmp, name), values)

    def start(self, name, host):
        config = self.config('%s-%s.conf' % (name, host), host)
        return daemons.Daemon(self, name, ['--config-file', config],
                              os.path.join(self.tmp, '%s-%s.log' % (name,
                                                                   host)))

    def status(self, hostname):
        try:
            return db_hosts.get_by_hostname(self.ctx, hostname)[0].status
        except Exception:
            return None

    def test_agent_registers_and_liveness_follows_it(self):
        conductor = self.start('conductor', 'ctl-1')
        agent = self.start('agent', 'cmp-1')
        wait_for(lambda: self.status('cmp-1') == 'up', timeout=30)
        agent.kill()
        wait_for(lambda: self.status('cmp-1') == 'down', timeout=30)
        self.assertTrue(conductor.running())
        self.start('agent', 'cmp-1')
        wait_for(lambda: self.status('cmp-1') == 'up', timeout=30)
        self.assertIsNotNone(conductor.terminate())
        self.assertIn('cmp-1', conductor.output())


class DaemonsMySQLTest(_DaemonTests, base.TestCase):
    backend = 'mysql'


class DaemonsPostgreSQLTest(_DaemonTests, base.TestCase):
    backend = 'postgresql'


class ConductorRefusesOldSchemaTest(base.TestCase):

    def test_empty_database_is_refused_with_the_fix(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        config = daemons.write_config(os.path.join(tmp, 'c.conf'), {
            'DEFAULT': {'transport_url': 'fake:/'},
            'database': {'connection': 'sqlite:///%s/empty.sqlite' % tmp}})
        conductor = daemons.Daemon(self, 'conductor',
                                   ['--config-file', config],
                                   os.path.join(tmp, 'c.log'))
        self.assertNotEqual(0, conductor.process.wait(60))
        self.assertIn('cyborg-dbsync upgrade', conductor.output())
