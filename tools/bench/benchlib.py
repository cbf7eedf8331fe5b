"""What cyborg's benchmarks share: a whole cyborg in this process.

``Stack`` runs the API on a loopback port (real HTTP), a conductor behind
it on real RPC (``transport_url``), and the embedded Placement, on a fresh
database: SQLite in the state directory, or a new database on the MariaDB
or PostgreSQL server of ``db_url`` (created here, dropped at the end).
``seed`` makes hosts report fake FPGA cards through the conductor's real
RPC path, as agents do. ``FakeNova`` is the Nova a benchmark's conductor
sends its external events to. ``CountedConductor`` is a
cyborg-conductor process that counts its database statements and the
messages it sends. The rest is what several scripts share: loading a
sibling script, writing a daemon's configuration, waiting for a
condition, timing this process's garbage collections.
"""

import collections
import concurrent.futures
import json
import logging
import math
import os
import random
import re
import socket
import subprocess
import sys
import threading
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
from cyborg.common import rpc
from cyborg.common import service as cyborg_service
from cyborg import conf as cyborg_conf
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg.objects import driver_device as dd
from cyborg.objects import host as host_obj
# This directory's, which every script that imports this module has on
# its path.
import proclib

CONF = cyborg_conf.CONF
DEVICES_PER_HOST = 8


def fake_devices(hostname, count, functions=1):
    """``count`` fake FPGA cards of ``hostname``, one deployable each."""
    devices = []
    for index in range(count):
        address = {'domain': '0000', 'bus': '%02x' % (index + 1),
                   'device': '00', 'function': '0'}
        handles = [dd.DriverAttachHandle(
            attach_type='TEST_PCI', in_use=False,
            attach_info=json.dumps(dict(address, function=str(f)),
                                   sort_keys=True))
            for f in range(functions)]
        deployable = dd.DriverDeployable(
            name='%s_fpga%d' % (hostname, index),
            num_accelerators=functions, driver_name='FAKEDRIVER',
            attribute_list=[dd.DriverAttribute(key='rc', value='FPGA'),
                            dd.DriverAttribute(key='trait0',
                                               value='CUSTOM_FAKE_DEVICE')],
            attach_handle_list=handles)
        devices.append(dd.DriverDevice(
            vendor='0xABCD', model='bench card', type='FPGA',
            std_board_info=json.dumps({'device_id': '0xabcd'}),
            vendor_board_info='bench',
            controlpath_id=dd.DriverControlPathID(
                cpid_type='PCI', cpid_info=json.dumps(address,
                                                      sort_keys=True)),
            deployable_list=[deployable], stub=False))
    return devices


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


class FakeNova:
    """Nova's ``os-server-external-events`` API on a loopback port, in the
    process that creates it: it answers as Nova does (the version
    documents a client discovers, 200 with a code for every event) and
    records every request and event it got, so that a benchmark can wait
    for an instance's events and count them."""

    EVENTS = '/v2.1/os-server-external-events'

    def __init__(self, threads=8):
        self.events = collections.defaultdict(list)
        self.requests = collections.Counter()
        self.received = 0
        self._cond = threading.Condition()
        self.server = api_server.WSGIServer(
            self, '127.0.0.1', free_port() if os.environ.get(PORTS_ENV)
            else 0, threads, name='fake-nova')

    @property
    def endpoint(self):
        return 'http://127.0.0.1:%d/v2.1' % self.server.port

    def start(self):
        self.server.start()
        return self

    def stop(self):
        self.server.stop()

    def _version(self, environ):
        return {'id': 'v2.1', 'status': 'CURRENT', 'version': '2.96',
                'min_version': '2.1', 'updated': '2013-07-23T11:33:21Z',
                'links': [{'rel': 'self', 'href': 'http://%s/v2.1/' %
                           environ.get('HTTP_HOST', '127.0.0.1')}]}

    def __call__(self, environ, start_response):
        method, path = environ['REQUEST_METHOD'], environ['PATH_INFO']
        with self._cond:
            self.requests['%s %s' % (method, path)] += 1
        status, body = '404 Not Found', {'itemNotFound': {
            'code': 404, 'message': 'Not found'}}
        if method == 'GET' and path in ('', '/'):
            status, body = '200 OK', {'versions': [self._version(environ)]}
        elif method == 'GET' and path.rstrip('/') == '/v2.1':
            status, body = '200 OK', {'version': self._version(environ)}
        elif method == 'POST' and path == self.EVENTS:
            length = int(environ.get('CONTENT_LENGTH') or 0)
            events = json.loads(environ['wsgi.input'].read(length))['events']
            self._record(events)
            status, body = '200 OK', {'events': [dict(e, code=200)
                                                 for e in events]}
        start_response(status, [('Content-Type', 'application/json'),
                                ('OpenStack-API-Version', 'compute 2.82')])
        return [json.dumps(body).encode()]

    def _record(self, events):
        with self._cond:
            for event in events:
                self.events[event['server_uuid']].append(event)
            self.received += len(events)
            self._cond.notify_all()

    def wait_for(self, instance, count, timeout):
        """The events of ``instance`` once there are ``count``; None
        after ``timeout`` seconds without them."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.events[instance]) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            return list(self.events[instance])

    def event_posts(self):
        with self._cond:
            return self.requests['POST %s' % self.EVENTS]


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
                 api_threads=16, nova_endpoint=None):
        self.state_dir = state_dir
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
        # Benchmarks print numbers, not every request Placement served.
        logging.getLogger().setLevel(logging.WARNING)

    def use_placement(self, port):
        use_service(CONF, 'placement', 'http://127.0.0.1:%d%s' % (
            port, aio_placement.PREFIX), 'admin')

    def start(self, conductor=True):
        self.configure()
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
        db_api.get_engine().dispose()
        for cleanup in reversed(self.cleanups):
            cleanup()


# -- what several scripts need --------------------------------------------

def load_script(name):
    """A script of this directory (no .py suffix) as a module."""
    import importlib.machinery
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    loader = importlib.machinery.SourceFileLoader('bench_' + name, path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


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


# -- a cyborg-conductor process that counts -------------------------------

_TABLE = re.compile(r'\b(?:INTO|UPDATE|FROM)\s+[`"]?(\w+)', re.IGNORECASE)
_WRITES = ('INSERT', 'UPDATE', 'DELETE')


def statement_kind(text):
    """``VERB table`` of an SQL statement (its first table), for the
    statements-by-kind breakdown."""
    words = text.split(None, 1)
    verb = words[0].upper() if words else '?'
    table = _TABLE.search(text)
    return '%s %s' % (verb, table.group(1) if table else '-')


def count_statements(counts, lock):
    """Count every statement this process's engines run into ``counts``
    (``statements``, ``writes`` and ``by_kind``), under ``lock``."""
    def statement(_conn, _cursor, text, _params, _context, _many):
        kind = statement_kind(text)
        with lock:
            counts['statements'] += 1
            counts['by_kind'][kind] = counts['by_kind'].get(kind, 0) + 1
            if text.lstrip()[:6].upper() in _WRITES:
                counts['writes'] += 1
    sa.event.listen(sa.engine.Engine, 'before_cursor_execute', statement)


def serve_counted_conductor(counts_file, argv):
    """cyborg-conductor with ``argv``, its database statements and the
    messages it sends counted into ``counts_file`` each second; the file
    says ``ready`` once its RPC server runs. What the process of a
    :class:`CountedConductor` runs."""
    from cyborg.cmd import conductor
    from cyborg.sim import processes as sim_processes
    counts = {'statements': 0, 'writes': 0, 'messages': 0, 'calls': 0,
              'casts': 0, 'ready': False, 'by_kind': {}}
    lock = threading.Lock()
    count_statements(counts, lock)
    sim_processes.count_messages(counts, lock)
    start = cyborg_service.RPCService.start

    def started(self):
        start(self)
        with lock:
            counts['ready'] = True
    cyborg_service.RPCService.start = started

    def write():
        while True:
            with lock:
                text = json.dumps(counts)
            with open(counts_file + '.new', 'w') as f:
                f.write(text)
            os.replace(counts_file + '.new', counts_file)
            time.sleep(1)
    threading.Thread(target=write, daemon=True).start()
    sys.argv = ['cyborg-conductor'] + argv
    return conductor.main()


class CountedConductor:
    """A cyborg-conductor process of ``config``, started as ``script
    --serve-conductor COUNTS_FILE --config-file CONFIG`` (a script that
    hands those arguments to :func:`serve_counted_conductor`), its log in
    ``state_dir``."""

    def __init__(self, script, state_dir, name, config):
        self.name = name
        self.counts_file = os.path.join(state_dir,
                                        'conductor-%s-counts.json' % name)
        self.log = open(os.path.join(state_dir, '%s.log' % name), 'w')
        self.process = subprocess.Popen(
            [sys.executable, script, '--serve-conductor', self.counts_file,
             '--config-file', config],
            stdout=self.log, stderr=subprocess.STDOUT)

    def counts(self):
        # Written each second: what it said a second ago at most.
        time.sleep(1.1)
        try:
            with open(self.counts_file) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def cpu(self):
        return proclib.tree_cpu_seconds(self.process.pid)

    def rss_mib(self):
        return round(proclib.tree_memory(self.process.pid)[0], 1)

    def wait_ready(self, timeout=300):
        deadline = time.monotonic() + timeout
        while not self.counts().get('ready'):
            if self.process.poll() is not None or time.monotonic() > deadline:
                with open(self.log.name) as f:
                    sys.stderr.write(f.read()[-3000:])
                raise SystemExit('conductor %s did not start' % self.name)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()
