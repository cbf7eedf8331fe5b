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

``NovaCloud(..., hosts=[...])`` runs one nova-compute per host name.
``SplitCloud`` runs cyborg as a deployment does instead of cyborg-aio:
cyborg-api, cyborg-conductor and one cyborg-agent per compute host, each
host with devices of its own, and a Placement process that Nova and
cyborg share. ``nova_release(venv)`` says which Nova a test runs against.
"""

import functools
import glob
import os
import shutil
import subprocess
import sys
import time
from urllib import parse
import uuid

import fixtures
import requests
import sqlalchemy as sa

from cyborg.common import keys
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

    def __init__(self, venv, workdir, hosts=(HOST,), sysfs_root=None,
                 cyborg_options=None, nova_options=None):
        """``hosts``: the compute hosts, one nova-compute each, and cyborg's
        agent of the same host name. ``sysfs_root``: a sysfs tree (a
        directory) for cyborg's agent instead of the fake driver's card,
        with ``cyborg_options`` (``{section: {option: value}}``, for example
        the enabled drivers and their groups) added to cyborg.conf;
        privileged writes to the tree (mdevs) go through a privsep daemon
        started without sudo. ``nova_options`` are added to nova.conf."""
        super().__init__()
        self.venv = venv
        self.workdir = workdir
        self.hosts = tuple(hosts)
        self.sysfs_root = sysfs_root
        self.cyborg_options = cyborg_options or {}
        self.nova_options = nova_options or {}
        self.processes = {}
        self.cyborg_starts = 0
        self.suffix = uuid.uuid4().hex[:10]

    # -- setting up ---------------------------------------------------

    def _setUp(self):
        os.makedirs(self.workdir, exist_ok=True)
        self.logs = os.path.join(self.workdir, 'logs')
        os.makedirs(self.logs, exist_ok=True)
        self._endpoints()
        self.glance = self.useFixture(_Started(standins.Glance()))
        self.neutron = self.useFixture(_Started(standins.Neutron()))
        self.proxy = self.useFixture(_Started(
            standins.TimingProxy(self.cyborg_url)))
        self.transport_url = self._vhost()
        self.databases = self._databases()
        self.start_cyborg()
        self._write_nova_config()
        self._nova_databases()
        for name in ('conductor', 'scheduler'):
            self._start_nova(name, [self._bin('nova-%s' % name)])
        for host in self.hosts:
            self.start_compute(host)
        self._start_nova('api', [
            self._bin('gunicorn'), '--bind', '127.0.0.1:%d' %
            self.ports['nova_api'], '--workers', '2', '--threads', '8',
            '--timeout', '300', '--no-control-socket', '--chdir', NOVA_SIDE,
            'nova_api_wsgi:application'])
        self._wait_for_compute()

    def _endpoints(self):
        """The ports and URLs: cyborg-aio's, with Placement in it."""
        self.ports = {name: daemons.free_port()
                      for name in ('cyborg', 'nova_api')}
        self.cyborg_url = 'http://127.0.0.1:%d' % self.ports['cyborg']
        self.placement_url = self.start_placement()
        self.nova_url = 'http://127.0.0.1:%d/v2.1' % self.ports['nova_api']

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

    #: The MariaDB databases made for the cloud: Nova's API, cell0 and
    #: cell1 databases (and, for split daemons, cyborg's).
    DATABASES = ('api', 'cell0', 'cell1')

    def _databases(self):
        """The databases of ``DATABASES`` on MariaDB: their URLs."""
        server = services.URLS['mysql']
        admin = sa.create_engine(server, isolation_level='AUTOCOMMIT')
        self.addCleanup(admin.dispose)
        names = {cell: 'nova_e2e_%s_%s' % (self.suffix, cell)
                 for cell in self.DATABASES}
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

    def aio_config(self, path):
        """The sections of cyborg-aio's configuration file, to be written
        at ``path``."""
        sections = {
            'DEFAULT': {'host': HOST, 'debug': 'false'},
            'agent': {'resource_provider_name': HOST},
            'conductor': {'placement_retry_interval': 1},
            'nova': {'auth_type': 'admin_token', 'token': ADMIN_TOKEN,
                     'endpoint': self.nova_url}}
        if self.sysfs_root:
            # The privsep daemon reads its sysfs root from the file.
            sections['agent']['sysfs_root'] = self.sysfs_root
            sections['cyborg_sys_admin'] = {'helper_command': '%s '
                                            '--config-file %s' % (
                                                _privsep_helper(), path)}
        _merge(sections, self.cyborg_options)
        return sections

    def start_cyborg(self):
        """cyborg-aio, told where Nova is (so the compute node provider is
        Nova's), retrying its Placement sync every second. Each start logs
        to a file of its own (``cyborg-aio-<n>.log``)."""
        self.cyborg_starts += 1
        path = os.path.join(self.workdir, 'cyborg.conf')
        args = ['--sysfs-root', self.sysfs_root] if self.sysfs_root else []
        config = daemons.write_config(path, self.aio_config(path))
        aio = daemons.Daemon(
            self, 'aio', ['--port', str(self.ports['cyborg']),
                          '--state-dir', os.path.join(self.workdir, 'cyborg'),
                          '--config-file', config] + args,
            os.path.join(self.logs, 'cyborg-aio-%d.log' % self.cyborg_starts))
        daemons.wait_for_http(self.cyborg_url + '/v2', daemon=aio)
        self.processes['cyborg'] = aio
        return aio

    def _write_nova_config(self):
        self.nova_dir = os.path.join(self.workdir, 'nova')
        os.makedirs(os.path.join(self.nova_dir, 'state'), exist_ok=True)
        noauth = {'auth_type': 'admin_token', 'token': ADMIN_TOKEN}
        sections = {}
        # nova-api reads api-paste.ini from the configuration directory.
        paste = os.path.join(self.nova_dir, 'api-paste.ini')
        shutil.copy(os.path.join(NOVA_SIDE, 'api-paste.ini'), paste)
        sections.update({
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
        _merge(sections, self.nova_options)
        daemons.write_config(os.path.join(self.nova_dir, 'nova.conf'),
                             sections)

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

    def _start_nova(self, name, command, args=None):
        if args is None:
            args = [] if name == 'api' else ['--config-dir', self.nova_dir]
        self.processes['nova-' + name] = daemons.Daemon(
            self, 'nova-' + name, args,
            os.path.join(self.logs, 'nova-%s.log' % name), command=command,
            env=self.nova_env())

    def compute_name(self, host):
        """``compute`` with one host (``nova-compute.log``), else
        ``compute-<host>``."""
        return 'compute' if len(self.hosts) == 1 else 'compute-' + host

    def start_compute(self, host):
        """nova-compute for ``host``: ``nova.conf``, then a file of its
        own with its host name and state directory (its node's uuid is
        kept there)."""
        state = os.path.join(self.workdir, 'nova-%s' % host)
        os.makedirs(state, exist_ok=True)
        own = daemons.write_config(os.path.join(state, 'host.conf'), {
            'DEFAULT': {'host': host, 'state_path': state},
            'oslo_concurrency': {'lock_path': os.path.join(state, 'lock')}})
        self._start_nova(self.compute_name(host), [self._bin('nova-compute')],
                         ['--config-file', os.path.join(self.nova_dir,
                                                        'nova.conf'),
                          '--config-file', own])

    def _wait_for_compute(self):
        """Until every compute host is in its cell, its provider (Nova's)
        has VCPU and cyborg's providers hang under it."""
        def api_answers():
            self.check_running()
            try:
                return requests.get(self.nova_url + '/', timeout=10).ok
            except requests.RequestException:
                return False
        # Its worker imports all of Nova before it answers.
        wait(api_answers, 240, 'nova-api')

        def ready(host):
            self.check_running()
            tree = self.provider_tree(host)
            return (tree and 'VCPU' in tree['inventories'] and
                    tree['children'] and
                    any(s['host'] == host and s['state'] == 'up'
                        for s in self.nova('GET', '/os-services?binary='
                                           'nova-compute', admin=True)
                        .json()['services']))
        for host in self.hosts:
            wait(functools.partial(ready, host), 240,
                 'nova-compute of %s and its devices in Placement' % host)
        # nova-scheduler maps the new compute hosts to their cell
        # ([scheduler] discover_hosts_in_cells_interval).
        wait(lambda: len(self.nova('GET', '/os-hypervisors', admin=True)
                         .json()['hypervisors']) == len(self.hosts), 60,
             'the hypervisors')

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

    def provider_tree(self, host=HOST):
        """Nova's compute node provider of ``host`` with its inventories
        and its children (cyborg's), or None while there is none."""
        roots = self.placement('/resource_providers?name=%s' % host)[
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


class SplitCloud(NovaCloud):
    """Compute hosts with devices of their own and cyborg as a deployment
    runs it: cyborg-api, cyborg-conductor and one cyborg-agent per host,
    each a process with its configuration file, and each agent with its
    state file and its host's signing key only (the conductor holds every
    key); cyborg's database on MariaDB; a Placement process
    (``placement_server``) that Nova and cyborg share; RPC on Nova's
    RabbitMQ vhost. Logs: ``placement.log``, ``cyborg-api.log``,
    ``cyborg-conductor.log``, ``cyborg-agent-<host>.log``,
    ``nova-compute-<host>.log``.

    ``hosts`` maps each host name (nova-compute's ``[DEFAULT] host``,
    and so its node name with the fake virt driver) to its agent's
    ``[agent]`` options (``enabled_drivers``, ``sysfs_root``, ...).
    ``agent_hosts`` maps a host name to its agent's ``[DEFAULT] host``
    where the two differ, as deployments set them (a short name and the
    FQDN); its ``[agent] resource_provider_name`` is the node name then
    too, as the install guide says. Daemons, logs and keys are named by
    the host name Nova has.
    """

    DATABASES = NovaCloud.DATABASES + ('cyborg',)
    API_HOST = 'e2e-api'
    CONDUCTOR_HOST = 'e2e-conductor'

    def __init__(self, venv, workdir, hosts, agent_hosts=None):
        super().__init__(venv, workdir, hosts=list(hosts))
        self.agent_options = dict(hosts)
        self.agent_hosts = dict(agent_hosts or {})

    def agent_host(self, host):
        """The ``[DEFAULT] host`` of the agent of Nova's ``host``."""
        return self.agent_hosts.get(host, host)

    def _endpoints(self):
        super()._endpoints()
        self.ports['placement'] = daemons.free_port()
        self.placement_url = 'http://127.0.0.1:%d' % self.ports['placement']

    def start_cyborg(self):
        """Placement, cyborg's schema and keys, then the conductor, the
        API and the agents."""
        self.cyborg_dir = os.path.join(self.workdir, 'cyborg')
        os.makedirs(self.cyborg_dir, exist_ok=True)
        os.makedirs(os.path.join(self.workdir, 'placement'), exist_ok=True)
        placement = daemons.Daemon(
            self, 'placement', [str(self.ports['placement']),
                                os.path.join(self.workdir, 'placement')],
            os.path.join(self.logs, 'placement.log'), command=[
                sys.executable, '-m', 'cyborg.tests.e2e.placement_server'])
        self.processes['placement'] = placement
        self._cyborg_schema()
        self._keys()
        daemons.wait_for_http(self.placement_url + '/', daemon=placement)
        self.start_cyborg_daemon('conductor', self.CONDUCTOR_HOST)
        api = self.start_cyborg_daemon('api', self.API_HOST)
        daemons.wait_for_http(self.cyborg_url + '/v2', daemon=api)
        for host in self.hosts:
            self.start_agent(host)
        return api

    def key_dir(self, name):
        return os.path.join(self.cyborg_dir, 'keys-%s' % name)

    def _keys(self):
        """The conductor's directory holds every key; the API's and each
        agent's only their own."""
        conductor = self.key_dir('conductor')
        identities = {'api': keys.API}
        identities.update({'agent-' + host: keys.host_identity(
            self.agent_host(host)) for host in self.hosts})
        for name, identity in identities.items():
            path, _created = keys.create(conductor, identity)
            own = self.key_dir(name)
            os.makedirs(own, exist_ok=True)
            shutil.copy(path, own)

    def cyborg_config(self, name, host, **sections):
        state = os.path.join(self.cyborg_dir, 'state-%s' % name)
        os.makedirs(state, exist_ok=True)
        values = {
            'DEFAULT': {'host': host, 'debug': 'false',
                        'auth_strategy': 'noauth', 'state_path': state,
                        'transport_url': self.transport_url},
            'database': {'connection': self.databases['cyborg']},
            'api': {'host_ip': '127.0.0.1', 'port': self.ports['cyborg'],
                    'api_workers': 1},
            'conductor': {'placement_retry_interval': 1},
            'security': {'key_dir': self.key_dir(name)},
            'placement': {'auth_type': 'admin_token', 'token': 'admin',
                          'endpoint': self.placement_url},
            'nova': {'auth_type': 'admin_token', 'token': ADMIN_TOKEN,
                     'endpoint': self.nova_url},
        }
        for section, options in sections.items():
            values.setdefault(section, {}).update(options)
        return daemons.write_config(
            os.path.join(self.cyborg_dir, '%s.conf' % name), values)

    def _cyborg_schema(self):
        config = self.cyborg_config('dbsync', self.CONDUCTOR_HOST)
        result = subprocess.run(
            [sys.executable, '-m', 'cyborg.cmd.dbsync', '--config-file',
             config, 'create_schema'], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, timeout=300)
        if result.returncode != 0:
            raise AssertionError('cyborg-dbsync: %s' % result.stdout[-3000:])

    def start_cyborg_daemon(self, name, host, **sections):
        """``cyborg-<name>`` for ``host``, logging to
        ``cyborg-<key>.log``; its key in ``processes`` is
        ``cyborg-<key>`` (``key`` is ``name``, or ``agent-<host>``). An
        agent's ``[DEFAULT] host`` is ``agent_host(host)``."""
        key = name if name != 'agent' else 'agent-' + host
        config = self.cyborg_config(
            key, host if name != 'agent' else self.agent_host(host),
            **sections)
        daemon = daemons.Daemon(
            self, name, ['--config-file', config],
            os.path.join(self.logs, 'cyborg-%s.log' % key))
        self.processes['cyborg-' + key] = daemon
        return daemon

    def start_agent(self, host):
        options = dict({'heartbeat_interval': 2,
                        'resource_provider_name': host,
                        'state_file': os.path.join(
                            self.cyborg_dir, 'agent-state-%s.json' % host)},
                       **self.agent_options[host])
        return self.start_cyborg_daemon('agent', host, agent=options)

    def kill_agent(self, host):
        """SIGKILL to ``host``'s agent, as a crash would."""
        self.processes.pop('cyborg-agent-' + host).kill()

    def restart_cyborg(self):
        raise NotImplementedError('a split cloud restarts one daemon')


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


def nova_release(venv):
    """The major version of the Nova installed in ``venv`` (34 for
    34.0.0), read from its package metadata."""
    found = glob.glob(os.path.join(venv, 'lib', 'python*', 'site-packages',
                                   'nova-*.dist-info'))
    if len(found) != 1:
        raise AssertionError('no single Nova in %s: %s' % (venv, found))
    return int(os.path.basename(found[0])[len('nova-'):].split('.')[0])


def _merge(sections, more):
    for section, options in more.items():
        sections.setdefault(section, {}).update(options)


def _privsep_helper():
    """privsep-helper of the Python that runs cyborg-aio (root already:
    no sudo)."""
    return os.path.join(os.path.dirname(sys.executable), 'privsep-helper')


def wait(predicate, timeout, what, interval=0.5):
    """``predicate()``'s first true result, polled until ``timeout``."""
    try:
        return test_hello.wait_for(predicate, timeout, interval)
    except AssertionError as e:
        raise AssertionError('%s: %s' % (what, e)) from e
