"""The peer suite's ``--api haproxy`` deployment: the API as deployers
run it (doc/source/admin/reference-deployment.rst), two uWSGI instances
of ``cyborg.wsgi.api:application`` behind HAProxy, with a conductor and
an agent (the fake driver's simulated card) behind them, on a database
of the run's own on the shared MariaDB and a RabbitMQ node of its own.

The HAProxy ``listen cyborg_api`` section and the uwsgi file are the
page's, read and given loopback ports by the reference deployment
test's classes (``cyborg.tests.functional.deployment``), which this
module drives with an ``Owner`` in place of a test.
"""

import os
import subprocess
import sys

import fixtures
import requests
import sqlalchemy as sa

from cyborg.aio import service as aio_service
from cyborg.api import server as api_server
from cyborg.common import keys
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import daemons
from cyborg.tests.functional import deployment
from cyborg.tests.functional import faults
from cyborg.tests.functional import glance
from cyborg.tests.functional import placement_fixture

CONDUCTOR_HOST = 'peer-conductor'
AGENT_HOST = 'peer-compute'
INSTANCES = ('ctl-1', 'ctl-2')
PROXY = 'cyborg_api'


class Owner(fixtures.Fixture):
    """What the deployment's classes and the tests' fixtures take as
    their test: what they start is stopped, and what they make removed,
    by ``cleanUp`` at the end of the run; a server that cannot be had
    ends the run."""

    def fail(self, message):
        raise SystemExit(message)

    skipTest = fail


class HADeployment:
    """Everything but Keystone: start() gives the endpoint to register
    (HAProxy's); the parts go when ``owner`` cleans up."""

    def __init__(self, workdir, owner, auth_sections, timeout):
        self.workdir = workdir
        self.owner = owner
        #: [keystone_authtoken] and [oslo_policy], as the aio mode has
        #: them.
        self.auth_sections = auth_sections
        self.timeout = timeout
        self.key_dir = os.path.join(workdir, 'keys')
        self.logs = []
        self.db_url = self.base = self.image = None
        self.haproxy = None

    def log_path(self, name):
        path = os.path.join(self.workdir, name + '.log')
        self.logs.append(path)
        return path

    def start(self):
        owner = self.owner
        rabbit = faults.PrivateRabbit.started(owner)
        self.db_url = cyborg_fixtures.server_database(owner, 'mysql',
                                                      prefix='cyborg_peer')
        for identity in (keys.API, keys.host_identity(CONDUCTOR_HOST),
                         keys.host_identity(AGENT_HOST)):
            keys.create(self.key_dir, identity)
        placement = self._placement()
        glance_url = self._glance()
        self.common = {
            'DEFAULT': {'transport_url': rabbit.url,
                        'auth_strategy': 'keystone',
                        'state_path': self.workdir},
            'database': {'connection': self.db_url},
            'placement': {'auth_type': 'admin_token', 'token': 'admin',
                          'endpoint': placement},
            'glance': {'auth_type': 'admin_token', 'token': 'admin',
                       'endpoint': glance_url,
                       'trusted_image_owners': glance.FakeGlance.OWNER},
            'security': {'key_dir': self.key_dir},
        }
        self.common.update(self.auth_sections)
        conductor = self.config('conductor', CONDUCTOR_HOST)
        self._dbsync(conductor)
        self.daemon('conductor', conductor)
        self.daemon('agent', self.config('agent', AGENT_HOST, agent={
            'resource_provider_name': AGENT_HOST,
            'state_file': os.path.join(self.workdir, 'agent-state.json')}))
        self.base = self._apis()
        self._wait_for_report()
        return self.base + '/v2'

    def config(self, name, host, **sections):
        values = {section: dict(options)
                  for section, options in self.common.items()}
        values['DEFAULT']['host'] = host
        for section, options in sections.items():
            values.setdefault(section, {}).update(options)
        return daemons.write_config(
            os.path.join(self.workdir, '%s.conf' % name), values)

    def daemon(self, name, config):
        return daemons.Daemon(self.owner, name, ['--config-file', config],
                              self.log_path(name))

    def _placement(self):
        """Placement alone in a process, on SQLite; the agent's compute
        node provider made in it (Nova's nova-compute would)."""
        port = daemons.free_port()
        state = os.path.join(self.workdir, 'placement')
        os.makedirs(state)
        server = daemons.Daemon(
            self.owner, 'placement',
            [state, 'sqlite:///%s' % os.path.join(state, 'placement.sqlite'),
             str(port)], self.log_path('placement'),
            command=[sys.executable, '-c', placement_fixture.SERVER])
        endpoint = 'http://127.0.0.1:%d' % port
        daemons.wait_for_http(endpoint + '/', timeout=self.timeout,
                              daemon=server)
        response = requests.post(
            endpoint + '/resource_providers', timeout=60,
            headers={'X-Auth-Token': 'admin',
                     'OpenStack-API-Version': 'placement 1.20'},
            json={'name': AGENT_HOST,
                  'uuid': aio_service.compute_node_uuid(AGENT_HOST)})
        if response.status_code != 200:
            raise SystemExit('Placement refused the compute node: %s %s'
                             % (response.status_code, response.text))
        return endpoint

    def _glance(self):
        """A stand-in Glance holding one FPGA image, served from this
        process (the clients' check programs the card with it)."""
        fake = glance.FakeGlance()
        self.image = fake.add(data=b'bitstream',
                              **{'accel:function_id': 'f00d'})
        server = api_server.WSGIServer(fake, '127.0.0.1', 0, 4,
                                       name='peer-glance')
        server.start()
        self.owner.addCleanup(server.stop)
        return 'http://127.0.0.1:%d' % server.port

    def _dbsync(self, config):
        path = self.log_path('dbsync')
        with open(path, 'w') as out:
            result = subprocess.run(
                [sys.executable, '-m', 'cyborg.cmd.dbsync', '--config-file',
                 config, 'upgrade'], stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL)
        if result.returncode:
            raise SystemExit('cyborg-dbsync upgrade failed (%s)'
                             % result.returncode)

    def _apis(self):
        """The page's two uwsgi instances and HAProxy's section for them;
        HAProxy's address once it takes both as up."""
        snippets = deployment.snippets()
        vip = daemons.free_port()
        addresses = {'%s:%d' % (deployment.VIP, deployment.API_PORT):
                     ('127.0.0.1', vip)}
        apis = []
        for name, address in zip(INSTANCES, deployment.CONTROLLERS,
                                 strict=False):
            port = daemons.free_port()
            addresses['%s:%d' % (address, deployment.API_PORT)] = (
                '127.0.0.1', port)
            config = self.config('api-%s' % name, name)
            api = deployment.UwsgiAPI(
                self.owner, self.workdir, name,
                deployment.api_ini(snippets['uwsgi'], port, config), port,
                config).start()
            self.logs.append(api.log + '.1')
            apis.append(api)
        for api in apis:
            api.wait_ready(self.timeout)
        self.haproxy = deployment.HAProxy(
            self.owner, self.workdir, deployment.localize(
                deployment.listen_section(snippets['haproxy'], PROXY),
                addresses))
        self.logs.append(os.path.join(self.workdir, 'haproxy.log'))
        deployment.wait_until(
            lambda: len(self.haproxy.up(PROXY)) == len(INSTANCES),
            self.timeout, what='HAProxy takes both API instances as up')
        return 'http://127.0.0.1:%d' % vip

    def _wait_for_report(self):
        """The agent's card in the database, with its provider in
        Placement (the tests bind to it)."""
        engine = sa.create_engine(self.db_url, poolclass=sa.pool.NullPool)

        def reported():
            with engine.connect() as connection:
                return connection.execute(sa.text(
                    'SELECT rp_uuid FROM deployables WHERE rp_uuid IS NOT '
                    'NULL')).all()
        try:
            deployment.wait_until(
                reported, self.timeout, interval=0.5,
                what="the agent's card in the database and Placement")
        finally:
            engine.dispose()

    def up(self):
        """The API instances HAProxy takes as up."""
        return self.haproxy.up(PROXY)

    def served(self):
        """{instance: responses HAProxy had from it} (``hrsp_*``)."""
        stats = self.haproxy.stats()
        return {server: sum(int(row[key] or 0) for key in row
                            if key.startswith('hrsp_'))
                for (proxy, server), row in stats.items() if proxy == PROXY}
