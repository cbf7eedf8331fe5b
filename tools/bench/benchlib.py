"""What cyborg's benchmarks share: a whole cyborg in this process.

``Stack`` runs the API on a loopback port (real HTTP), a conductor behind
it on real RPC (``transport_url``), and the embedded Placement, on a fresh
database: SQLite in the state directory, or a new database on the MariaDB
or PostgreSQL server of ``db_url`` (created here, dropped at the end).
``seed`` makes hosts report fake FPGA cards through the conductor's real
RPC path, as agents do. ``fake_nova`` is the Nova a benchmark's
conductor sends its external events to (:mod:`cyborg.sim.nova`).
``Conductor`` is a cyborg-conductor process (which serves its metrics
when its configuration says so: :mod:`scrape`). The rest is what
several scripts share: writing a daemon's
configuration, waiting for a condition, timing this process's garbage
collections.
"""

import concurrent.futures
import logging
import math
import os
import random
import socket
import subprocess
import sys
import time
import uuid

from keystoneauth1 import loading as ks_loading
import sqlalchemy as sa

from cyborg.agent import reporter as agent_reporter
from cyborg.aio import placement as aio_placement
from cyborg.api import app as api_app
from cyborg.api import server as api_server
from cyborg.common.clients import placement as placement_client
from cyborg.common import context as cyborg_context
from cyborg.common import keys
from cyborg.common import metrics
from cyborg.common import rpc
from cyborg.common import service as cyborg_service
from cyborg import conf as cyborg_conf
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg.objects import host as host_obj
from cyborg.sim import hosts as sim_hosts
from cyborg.sim import nova as sim_nova
# This directory's, which every script that imports this module has on
# its path.
import proclib
import scrape

CONF = cyborg_conf.CONF
DEVICES_PER_HOST = 8


def fake_devices(hostname, count, functions=1):
    """``count`` fake FPGA cards of ``hostname``, one deployable each
    (:func:`cyborg.sim.hosts.bench_cards`)."""
    return sim_hosts.bench_cards(hostname, count, functions)


#: The environment variable naming the loopback ports the benchmarks'
#: servers take (``23000-23999``); unset, the kernel picks any free one.
PORTS_ENV = 'CYBORG_BENCH_PORTS'


def free_port():
    """A loopback port free now: one of ``$CYBORG_BENCH_PORTS`` (``FIRST-
    LAST``), tried at random, when set; else one of the tests' (out of
    the kernel's ephemeral ports, which an outgoing connection may take
    before the server binds it: see ``daemons.free_port``)."""
    ports = os.environ.get(PORTS_ENV)
    if not ports:
        from cyborg.tests.functional import daemons
        return daemons.free_port()
    first, last = (int(x) for x in ports.split('-'))
    candidates = random.sample(range(first, last + 1), last - first + 1)
    for port in candidates:
        with socket.socket() as sock:
            try:
                sock.bind(('127.0.0.1', port))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise OSError('no free port in %s' % ports)


def fake_nova(threads=8):
    """A :class:`cyborg.sim.nova.FakeNova` on a port of
    ``$CYBORG_BENCH_PORTS`` when set (any free one otherwise)."""
    return sim_nova.FakeNova(
        free_port() if os.environ.get(PORTS_ENV) else 0, threads)


TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def key_dir(state_dir):
    """The key directory of a benchmark's run in ``state_dir``: that of
    its daemons (:func:`daemon_keys`) and of itself (:func:`key_store`)."""
    return os.path.join(state_dir, 'keys')


def daemon_keys(state_dir, hosts=(), api=True):
    """Make the RPC keys of the daemons a benchmark starts, as the
    security guide says (``cyborg-status keys create --api --host ...``,
    files of mode 0600), in :func:`key_dir` of ``state_dir``; returns
    the ``[security]`` section of every daemon's configuration. A host's
    agent finds its key there (``host.<host>.key``), a conductor every
    key, the API its own.

    Every script that starts cyborg's daemons makes their keys here, so
    that the next thing a daemon needs to start reaches all of them."""
    directory = key_dir(state_dir)
    command = [sys.executable, '-m', 'cyborg.cmd.status', 'keys', 'create',
               '--key-dir', directory] + (['--api'] if api else [])
    for host in hosts:
        command += ['--host', host]
    if api or hosts:
        subprocess.run(command, check=True, cwd=TOP,
                       env=dict(os.environ, PYTHONPATH=TOP),
                       stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    else:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    return {'key_dir': directory}


def key_store(state_dir):
    """The RPC keys of a benchmark's own process, which plays every
    host: each key is made in :func:`key_dir` of ``state_dir`` when first
    used."""
    return keys.KeyStore(key_dir(state_dir), create_missing=True)


def server_database(url):
    """(url of a new database on the server of ``url``, drop function)."""
    server = sa.engine.make_url(url)
    name = 'bench_%s' % uuid.uuid4().hex[:10]
    admin = sa.create_engine(server, isolation_level='AUTOCOMMIT')
    with admin.connect() as connection:
        connection.execute(sa.text('CREATE DATABASE %s' % name))

    def drop():
        with admin.connect() as connection:
            connection.execute(sa.text('DROP DATABASE IF EXISTS %s' % name))
        admin.dispose()
    return (server.set(database=name).render_as_string(hide_password=False),
            drop)


def use_service(conf, group, endpoint, token):
    """Send the requests of ``[group]`` to ``endpoint`` with ``token``
    (keystoneauth's admin_token plugin: no Keystone)."""
    conf.register_opts(ks_loading.get_auth_plugin_conf_options('admin_token'),
                       group=group)
    conf.set_override('auth_type', 'admin_token', group=group)
    conf.set_override('token', token, group=group)
    conf.set_override('endpoint', endpoint, group=group)


class Stack:

    def __init__(self, state_dir, db_url=None, transport_url='fake:/',
                 api_threads=16, nova_endpoint=None, metrics_port=None):
        self.state_dir = state_dir
        #: Where this process serves its metrics (``[metrics]``), if
        #: ``metrics_port`` is given.
        self.metrics_port = metrics_port
        self.metrics = None
        self.db_url = db_url
        self.transport_url = transport_url
        self.nova_endpoint = nova_endpoint
        self.api_threads = api_threads
        self.server = None
        self.services = []
        self.cleanups = []
        self.context = cyborg_context.get_admin_context()

    @property
    def db_kind(self):
        return sa.engine.make_url(self.db_url).get_backend_name()

    @property
    def base_url(self):
        return 'http://127.0.0.1:%d' % self.server.port

    def configure(self):
        cyborg_service.prepare_service(['bench'], CONF,
                                       default_config_files=[])
        rpc.register_opts(CONF)
        if self.db_url and not self.db_url.startswith('sqlite'):
            self.db_url, drop = server_database(self.db_url)
            self.cleanups.append(drop)
        self.db_url = self.db_url or 'sqlite:///%s' % os.path.join(
            self.state_dir, 'cyborg.sqlite')
        CONF.set_override('connection', self.db_url, group='database')
        CONF.set_override('transport_url', self.transport_url)
        CONF.set_override('auth_strategy', 'noauth')
        CONF.set_override('state_path', self.state_dir)
        CONF.set_override('host', 'bench-conductor')
        # The seeded hosts report once and never again: they must not be
        # marked down (and their devices reserved) while numbers are taken.
        CONF.set_override('host_down_timeout', 24 * 3600, group='conductor')
        if self.nova_endpoint:
            use_service(CONF, 'nova', self.nova_endpoint, 'nova-token')
        if self.metrics_port:
            # Before the database is configured: statements are counted
            # only where metrics are served.
            for option, value in scrape.metrics_options(
                    self.metrics_port).items():
                CONF.set_override(option, value, group='metrics')
        # Benchmarks print numbers, not every request Placement served.
        logging.getLogger().setLevel(logging.WARNING)

    def use_placement(self, port):
        use_service(CONF, 'placement', 'http://127.0.0.1:%d%s' % (
            port, aio_placement.PREFIX), 'admin')

    @property
    def metrics_url(self):
        return ('http://127.0.0.1:%d' % self.metrics_port
                if self.metrics_port else None)

    def start(self, conductor=True):
        self.configure()
        # One listener for the API and the conductor of this process.
        self.metrics = metrics.serve(CONF)
        db_api.configure(CONF)
        migration.upgrade('head')
        rpc.init(CONF, key_store(self.state_dir), identity=keys.CONDUCTOR)
        manager = conductor_manager.ConductorManager('bench-conductor', CONF)
        # Like the all-in-one: on the in-process bus the API calls its
        # conductor directly; on a broker it goes through RPC.
        local = (conductor_rpcapi.LocalConductorAPI(manager)
                 if self.transport_url.startswith(('fake', 'local'))
                 else None)
        app = aio_placement.mount(
            api_app.setup_app(CONF, conductor_api=local),
            aio_placement.build_app(self.state_dir))
        self.server = api_server.WSGIServer(app, '127.0.0.1', 0,
                                            self.api_threads, name='bench')
        self.server.start()
        self.use_placement(self.server.port)
        if conductor:
            self.start_conductor('bench-conductor', manager)

    def start_conductor(self, host, manager=None):
        manager = manager or conductor_manager.ConductorManager(host, CONF)
        service = cyborg_service.RPCService(host, rpc.CONDUCTOR_TOPIC,
                                            manager, conf=CONF)
        service.start()
        self.services.append(service)
        return manager

    def report_host(self, conductor, hostname, devices):
        """An agent's start: hello, then its report; the compute node
        provider is made first, as Nova would have."""
        client = placement_client.connect(CONF)
        if placement_client.find_provider(client, hostname) is None:
            placement_client.create_provider(client, hostname)
        conductor.agent_hello(self.context, host_obj.AgentHello(
            hostname=hostname, status='READY', endpoint=hostname,
            version='bench', drivers=[]))
        digest = agent_reporter.report_hash(devices)
        accepted = conductor.report_data(
            self.context, hostname, devices, digest,
            report_seq=agent_reporter.next_report_seq(0))
        if accepted != digest:
            raise RuntimeError('report of %s not accepted' % hostname)

    def seed(self, deployables, per_host=DEVICES_PER_HOST, threads=8):
        """Hosts with ``per_host`` cards each report until there are
        ``deployables`` deployables; ``threads`` agents at a time."""
        conductor = conductor_rpcapi.ConductorAPI()

        def one(index):
            count = min(per_host, deployables - index * per_host)
            hostname = 'bench-host-%04d' % index
            self.report_host(conductor, hostname,
                             fake_devices(hostname, count))

        hosts = math.ceil(deployables / per_host)
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            for future in [pool.submit(one, i) for i in range(hosts)]:
                future.result()

    def provider_uuids(self):
        """``[rp_uuid, hostname]`` of every deployable."""
        from cyborg.db import models
        with db_api.reader.using(self.context) as session:
            return [[row.rp_uuid, row.hostname] for row in session.query(
                models.Deployable.rp_uuid, models.Device.hostname).join(
                    models.Device,
                    models.Device.id == models.Deployable.device_id)
                .order_by(models.Deployable.id)]

    def stop(self):
        for service in reversed(self.services):
            service.stop()
        if self.server is not None:
            self.server.stop()
        rpc.cleanup()
        if self.metrics is not None:
            self.metrics.stop()
        db_api.get_engine().dispose()
        for cleanup in reversed(self.cleanups):
            cleanup()


# -- what several scripts need --------------------------------------------

def write_config(path, sections):
    """``sections`` ({section: {option: value}}) as an ini file at
    ``path``; returns ``path``."""
    with open(path, 'w') as f:
        for section, options in sections.items():
            f.write('[%s]\n' % section)
            f.writelines('%s = %s\n' % item for item in options.items())
    return path


def wait_until(predicate, timeout, interval=0.5):
    """Whether ``predicate()`` came true within ``timeout`` seconds,
    asked every ``interval``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


class GCPauses:
    """A ``gc.callbacks`` entry: how many collections, and the longest,
    in milliseconds."""

    def __init__(self):
        self.count = 0
        self.longest = 0.0
        self._began = None

    def __call__(self, phase, _info):
        if phase == 'start':
            self._began = time.perf_counter()
        elif self._began is not None:
            self.count += 1
            self.longest = max(self.longest,
                               (time.perf_counter() - self._began) * 1000)

    def summary(self):
        return {'collections': self.count,
                'longest_ms': round(self.longest, 1)}


# -- a cyborg-conductor process that serves its metrics ------------------

class Conductor:
    """A cyborg-conductor process of ``config`` (which should enable its
    ``[metrics]``: :func:`scrape.metrics_options`), its log in
    ``state_dir``; its metrics at :attr:`metrics_url` when ``port`` is
    given."""

    def __init__(self, state_dir, name, config, port=None):
        self.name = name
        self.metrics_url = 'http://127.0.0.1:%d' % port if port else None
        self.log = open(os.path.join(state_dir, '%s.log' % name), 'w')
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'cyborg.cmd.conductor', '--config-file',
             config], stdout=self.log, stderr=subprocess.STDOUT, cwd=TOP,
            env=dict(os.environ, PYTHONPATH=TOP))

    def cpu(self):
        return proclib.tree_cpu_seconds(self.process.pid)

    def rss_mib(self):
        return round(proclib.tree_memory(self.process.pid)[0], 1)

    def _started(self):
        with open(self.log.name) as f:
            return 'Started ConductorManager' in f.read()

    def wait_ready(self, timeout=300):
        deadline = time.monotonic() + timeout
        while not self._started():
            if self.process.poll() is not None or time.monotonic() > deadline:
                with open(self.log.name) as f:
                    sys.stderr.write(f.read()[-3000:])
                raise SystemExit('conductor %s did not start' % self.name)
            time.sleep(0.2)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()
