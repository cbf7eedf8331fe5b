"""A small cloud on loopback: the real Nova from PyPI and cyborg-aio.

``NovaCloud`` starts, on free loopback ports:

* cyborg-aio (API, conductor, agent with the fake driver's card, and the
  embedded Placement that Nova uses too), from this checkout;
* nova-api (under gunicorn), nova-conductor, nova-scheduler and
  nova-compute with the fake virt driver, from the virtualenv that
  ``tools/nova-e2e`` made (``CYBORG_NOVA_E2E_VENV``);
* stand-ins for Glance and Neutron, and a proxy that times the calls Nova
  makes to cyborg (``standins``).

Nova gets its own RabbitMQ vhost and its own MariaDB databases, removed
again by ``cleanUp``. nova-compute and cyborg's agent share one host name
(``HOST``): nova-compute creates the compute node provider and cyborg
hangs the card's provider under it.
"""

import os
import shutil
import subprocess
import time
from urllib import parse
import uuid

import fixtures
import requests
import sqlalchemy as sa

from cyborg.tests.e2e import standins
from cyborg.tests.functional import daemons
from cyborg.tests.functional import test_hello
from cyborg.tests import services

VENV_ENV = 'CYBORG_NOVA_E2E_VENV'
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                   '..'))
NOVA_SIDE = os.path.join(TOP, 'tools', 'lib', 'nova-e2e')
HOST = 'e2e-compute'
PROJECT = '4f0e9c1d2b3a45d6978e1f2a3b4c5d6e'
ADMIN_TOKEN = 'admin:%s' % PROJECT
USER_TOKEN = 'demo:%s' % PROJECT
COMPUTE_VERSION = 'compute 2.96'
PLACEMENT_VERSION = 'placement 1.39'
BOOT_TIMEOUT = 300


class NovaCloud(fixtures.Fixture):

    def __init__(self, venv, workdir):
        super().__init__()
        self.venv = venv
        self.workdir = workdir
        self.processes = {}
        self.cyborg_starts = 0
        self.suffix = uuid.uuid4().hex[:10]

    # -- setting up ---------------------------------------------------

    def _setUp(self):
        os.makedirs(self.workdir, exist_ok=True)
        self.logs = os.path.join(self.workdir, 'logs')
        os.makedirs(self.logs, exist_ok=True)
        self.ports = {name: daemons.free_port()
                      for name in ('cyborg', 'nova_api')}
        self.cyborg_url = 'http://127.0.0.1:%d' % self.ports['cyborg']
        self.placement_url = self.start_placement()
        self.nova_url = 'http://127.0.0.1:%d/v2.1' % self.ports['nova_api']
        self.glance = self.useFixture(_Started(standins.Glance()))
        self.neutron = self.useFixture(_Started(standins.Neutron()))
        self.proxy = self.useFixture(_Started(
            standins.TimingProxy(self.cyborg_url)))
        self.transport_url = self._vhost()
        self.databases = self._databases()
        self.start_cyborg()
        self._write_nova_config()
        self._nova_databases()
        for name in ('conductor', 'scheduler', 'compute'):
            self._start_nova(name, [self._bin('nova-%s' % name)])
        self._start_nova('api', [
            self._bin('gunicorn'), '--bind', '127.0.0.1:%d' %
            self.ports['nova_api'], '--workers', '2', '--threads', '8',
            '--timeout', '300', '--no-control-socket', '--chdir', NOVA_SIDE,
            'nova_api_wsgi:application'])
        self._wait_for_compute()

    def _bin(self, name):
        return os.path.join(self.venv, 'bin', name)

    def _vhost(self):
        """A RabbitMQ vhost of our own (rabbitmqctl), deleted at the end."""
        base = services.URLS['rabbit']
        vhost = 'cyborg-e2e-%s' % self.suffix
        self._rabbitmqctl('add_vhost', vhost)
        self.addCleanup(self._rabbitmqctl, 'delete_vhost', vhost)
        self._rabbitmqctl('set_permissions', '-p', vhost,
                          parse.urlsplit(base).username or 'guest',
                          '.*', '.*', '.*')
        return base.rstrip('/') + '/' + vhost

    @staticmethod
    def _rabbitmqctl(*args):
        subprocess.run(['rabbitmqctl', '-q'] + list(args), check=True,
                       stdout=subprocess.DEVNULL, timeout=120)

    def _databases(self):
        """Nova's API, cell0 and cell1 databases on MariaDB."""
        server = services.URLS['mysql']
        admin = sa.create_engine(server, isolation_level='AUTOCOMMIT')
        self.addCleanup(admin.dispose)
        names = {cell: 'nova_e2e_%s_%s' % (self.suffix, cell)
                 for cell in ('api', 'cell0', 'cell1')}
        for name in names.values():
            with admin.connect() as connection:
                connection.execute(sa.text('CREATE DATABASE %s' % name))
            self.addCleanup(self._drop, admin, name)
        url = sa.engine.make_url(server)
        return {cell: url.set(drivername='mysql+pymysql', database=name)
                .render_as_string(hide_password=False) + '?charset=utf8'
                for cell, name in names.items()}

    @staticmethod
    def _drop(admin, name):
        with admin.connect() as connection:
            connection.execute(sa.text('DROP DATABASE IF EXISTS %s' % name))

    def start_placement(self):
        """The Placement everyone uses: cyborg-aio's embedded one."""
        return self.cyborg_url + '/placement'

    def cyborg_config(self):
        """The sections of cyborg-aio's configuration file."""
        return {
            'DEFAULT': {'host': HOST, 'debug': 'false'},
            'agent': {'resource_provider_name': HOST},
            'conductor': {'placement_retry_interval': 1},
            'nova': {'auth_type': 'admin_token', 'token': ADMIN_TOKEN,
                     'endpoint': self.nova_url}}

    def start_cyborg(self):
        """cyborg-aio, told where Nova is (so the compute node provider is
        Nova's), retrying its Placement sync every second. Each start logs
        to a file of its own (``cyborg-aio-<n>.log``)."""
        self.cyborg_starts += 1
        config = daemons.write_config(
            os.path.join(self.workdir, 'cyborg.conf'), self.cyborg_config())
        aio = daemons.Daemon(
            self, 'aio', ['--port', str(self.ports['cyborg']),
                          '--state-dir', os.path.join(self.workdir, 'cyborg'),
                          '--config-file', config],
            os.path.join(self.logs, 'cyborg-aio-%d.log' % self.cyborg_starts))
        daemons.wait_for_http(self.cyborg_url + '/v2', daemon=aio)
        self.processes['cyborg'] = aio
        return aio

    def _write_nova_config(self):
        self.nova_dir = os.path.join(self.workdir, 'nova')
        os.makedirs(os.path.join(self.nova_dir, 'state'), exist_ok=True)
        noauth = {'auth_type': 'admin_token', 'token': ADMIN_TOKEN}
        # nova-api reads api-paste.ini from the configuration directory.
        paste = os.path.join(self.nova_dir, 'api-paste.ini')
        shutil.copy(os.path.join(NOVA_SIDE, 'api-paste.ini'), paste)
        daemons.write_config(os.path.join(self.nova_dir, 'nova.conf'), {
            'DEFAULT': {
                'host': HOST, 'my_ip': '127.0.0.1', 'debug': 'true',
                'transport_url': self.transport_url,
                'state_path': os.path.join(self.nova_dir, 'state'),
                'compute_driver': 'fake.FakeDriverWithoutFakeNodes',
                'shelved_offload_time': -1,
                'instance_build_timeout': BOOT_TIMEOUT,
                'heal_instance_info_cache_interval': -1},
            'wsgi': {'api_paste_config': paste},
            'api': {'auth_strategy': 'keystone'},
            'api_database': {'connection': self.databases['api']},
            'database': {'connection': self.databases['cell1']},
            'oslo_concurrency': {'lock_path': os.path.join(self.nova_dir,
                                                           'lock')},
            'scheduler': {'discover_hosts_in_cells_interval': 2},
            'compute': {'max_concurrent_builds': 16},
            'placement': dict(noauth, token='admin',
                              endpoint=self.placement_url),
            'glance': dict(noauth, endpoint_override=self.glance.url),
            'neutron': dict(noauth, endpoint=self.neutron.url,
                            endpoint_override=self.neutron.url),
            'cyborg': {'endpoint_override': self.proxy.url + '/v2'},
            'service_user': dict(noauth, token='nova',
                                 send_service_user_token='true',
                                 endpoint=self.nova_url),
            'quota': {'instances': -1, 'cores': -1, 'ram': -1},
            'vnc': {'enabled': 'false'},
            'oslo_messaging_notifications': {'driver': 'noop'}})

    def nova_env(self):
        return {'OS_NOVA_CONFIG_DIR': self.nova_dir,
                'PYTHONPATH': NOVA_SIDE}

    def _nova_databases(self):
        """Nova's schemas and cells (``nova_setup.py``, nova-manage's
        steps in one process)."""
        started = time.monotonic()
        result = subprocess.run(
            [self._bin('python'), os.path.join(NOVA_SIDE, 'nova_setup.py'),
             self.nova_dir, self.databases['cell0'], self.databases['cell1'],
             self.transport_url], env=dict(os.environ, **self.nova_env()),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=900)
        with open(os.path.join(self.logs, 'nova-setup.log'), 'w') as log:
            log.write('exit %d after %.1f s\n%s' % (
                result.returncode, time.monotonic() - started,
                result.stdout))
        if result.returncode != 0:
            raise AssertionError('Nova\'s databases: %s' %
                                 result.stdout[-3000:])

    def _start_nova(self, name, command):
        args = [] if name == 'api' else ['--config-dir', self.nova_dir]
        self.processes['nova-' + name] = daemons.Daemon(
            self, 'nova-' + name, args,
            os.path.join(self.logs, 'nova-%s.log' % name), command=command,
            env=self.nova_env())

    def _wait_for_compute(self):
        """Until the compute host is in its cell, its provider (Nova's)
        has VCPU and the card's provider hangs under it."""
        def api_answers():
            self.check_running()
            try:
                return requests.get(self.nova_url + '/', timeout=10).ok
            except requests.RequestException:
                return False
        # Its worker imports all of Nova before it answers.
        wait(api_answers, 240, 'nova-api')

        def ready():
            self.check_running()
            tree = self.provider_tree()
            return (tree and 'VCPU' in tree['inventories'] and
                    tree['children'] and
                    any(s['host'] == HOST and s['state'] == 'up'
                        for s in self.nova('GET', '/os-services?binary='
                                           'nova-compute', admin=True)
                        .json()['services']))
        wait(ready, 240, 'nova-compute and the card in Placement')
        # nova-scheduler maps the new compute host to its cell
        # ([scheduler] discover_hosts_in_cells_interval).
        wait(lambda: self.nova('GET', '/os-hypervisors', admin=True)
             .json()['hypervisors'], 60, 'the hypervisor')

    def check_running(self):
        for name, process in self.processes.items():
            if not process.running():
                raise AssertionError('%s exited:\n%s' % (
                    name, process.output()[-5000:]))

    # -- talking to the services -------------------------------------

    def nova(self, method, path, body=None, admin=False, expect=None):
        response = requests.request(
            method, self.nova_url + path, json=body, timeout=120, headers={
                'X-Auth-Token': ADMIN_TOKEN if admin else USER_TOKEN,
                'OpenStack-API-Version': COMPUTE_VERSION})
        if expect is not None and response.status_code != expect:
            raise AssertionError('%s %s: %s %s' % (
                method, path, response.status_code, response.text))
        return response

    def cyborg(self, method, path, body=None, expect=None, version=None,
               **params):
        headers = {'X-Auth-Token': ADMIN_TOKEN}
        if version:
            headers['OpenStack-API-Version'] = 'accelerator %s' % version
        response = requests.request(
            method, self.cyborg_url + '/v2' + path, json=body, params=params,
            timeout=60, headers=headers)
        if expect is not None and response.status_code != expect:
            raise AssertionError('%s %s: %s %s' % (
                method, path, response.status_code, response.text))
        return response

    def placement(self, path):
        response = requests.get(
            self.placement_url + path, timeout=60, headers={
                'X-Auth-Token': 'admin',
                'OpenStack-API-Version': PLACEMENT_VERSION})
        response.raise_for_status()
        return response.json()

    def provider_tree(self):
        """Nova's compute node provider with its inventories and its
        children (cyborg's), or None while there is none."""
        roots = self.placement('/resource_providers?name=%s' % HOST)[
            'resource_providers']
        if not roots:
            return None
        root = roots[0]
        tree = self.placement('/resource_providers?in_tree=%s' %
                              root['uuid'])['resource_providers']
        return dict(root, inventories=self.placement(
            '/resource_providers/%s/inventories' % root['uuid'])[
                'inventories'],
            children=[p for p in tree if p['uuid'] != root['uuid']])

    def arqs(self, instance=None):
        params = {'instance': instance} if instance else {}
        return self.cyborg('GET', '/accelerator_requests', expect=200,
                           **params).json()['arqs']

    def allocations(self, consumer):
        return self.placement('/allocations/%s' % consumer)['allocations']

    def usages(self, provider_uuid):
        return self.placement('/resource_providers/%s/usages' %
                              provider_uuid)['usages']

    def log_lines(self, prefix, *needles):
        """The lines of the logs named ``prefix*`` that hold every one of
        ``needles``: what a failure message shows of the services' view."""
        found = []
        for name in sorted(os.listdir(self.logs)):
            if not name.startswith(prefix):
                continue
            with open(os.path.join(self.logs, name), errors='replace') as f:
                found.extend('%s: %s' % (name, line.rstrip()[:600])
                             for line in f
                             if all(n in line for n in needles))
        return found

    def restart_cyborg(self):
        process = self.processes.pop('cyborg')
        if process.terminate() != 0:
            raise AssertionError('cyborg-aio did not stop cleanly:\n%s' %
                                 process.output()[-3000:])
        return self.start_cyborg()


class _Started(fixtures.Fixture):
    """A stand-in served for the fixture's life."""

    def __init__(self, standin):
        super().__init__()
        self.standin = standin

    def _setUp(self):
        self.standin.start()
        self.addCleanup(self.standin.stop)

    def __getattr__(self, name):
        return getattr(self.standin, name)


def wait(predicate, timeout, what, interval=0.5):
    """``predicate()``'s first true result, polled until ``timeout``."""
    try:
        return test_hello.wait_for(predicate, timeout, interval)
    except AssertionError as e:
        raise AssertionError('%s: %s' % (what, e)) from e
