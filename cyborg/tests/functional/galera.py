"""A private three-node MariaDB Galera cluster on loopback, for tests and
benchmarks.

``Cluster`` starts three ``mariadbd`` processes from Debian's
``mariadb-server`` and ``galera-4`` packages, each with its own data
directory, socket and ports under a temporary directory, run as the
current user: the first bootstraps the cluster (``--wsrep-new-cluster``),
the others join it by state transfer (rsync). The shared MariaDB on 3306
is never touched. Without the packages the test is skipped (failed under
``CYBORG_TEST_REQUIRE_SERVICES``).

``Database`` points cyborg's engine at one database of the cluster, with
one connection pool per node: ``on_node(index)`` (a context manager) and
``route(manager, index)`` (every RPC endpoint of a conductor manager)
choose the node the calling thread's transactions run on, so that two
conductors in one process each use their own node, as two conductor
daemons configured with different nodes would. Threads that chose no
node use the first.
"""

import atexit
import contextlib
import functools
import inspect
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid

import fixtures
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import engines
from oslo_db.sqlalchemy import orm
import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg.db import models
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests import services

MARIADBD = '/usr/sbin/mariadbd'
INSTALL_DB = '/usr/bin/mariadb-install-db'
PROVIDER = '/usr/lib/galera/libgalera_smm.so'
SST = '/usr/bin/wsrep_sst_rsync'
REQUIRED = (MARIADBD, INSTALL_DB, PROVIDER, SST)

NODES = 3
# Each node listens on four ports: SQL, group communication, incremental
# state transfer and rsync state transfer.
PORTS_PER_NODE = 4
PORT_RANGE = (27000, 27999)

# How long a node may take to start or join (seconds).
START_TIMEOUT = 120
# How long a node may take to apply the creation of a database and its
# tables on another node (seconds); far more than it ever takes.
APPLY_TIMEOUT = 60

# The queries of Node.tables: plain SELECTs, which a causal read waits
# before (wsrep_sync_wait bit 1). SHOW DATABASES and SHOW TABLES would not
# wait: SHOW statements wait only under bit 8.
_SCHEMA = sa.text('SELECT schema_name FROM information_schema.schemata '
                  'WHERE schema_name = :database')
_TABLES = sa.text('SELECT table_name FROM information_schema.tables '
                  'WHERE table_schema = :database')


def missing():
    """What this machine lacks to run a cluster; None if nothing."""
    absent = [path for path in REQUIRED if not os.path.exists(path)]
    if shutil.which('rsync') is None:
        absent.append('rsync')
    if absent:
        return ('MariaDB Galera is not installed (missing %s; install the '
                'mariadb-server, galera-4 and rsync packages)'
                % ', '.join(absent))
    return None


def _port_free(port):
    with socket.socket() as sock:
        try:
            sock.bind(('127.0.0.1', port))
        except OSError:
            return False
        return True


def _free_ports(count, start=None):
    """``count`` consecutive free ports in PORT_RANGE, from a place
    that depends on this process, so parallel runs rarely meet."""
    low, high = PORT_RANGE
    span = high - low + 1
    first = start if start is not None else (os.getpid() * 7) % span
    for step in range(0, span, count):
        base = low + (first + step) % (span - count)
        if all(_port_free(base + i) for i in range(count)):
            return list(range(base, base + count))
    raise RuntimeError('no %d free ports in %s' % (count, PORT_RANGE))


class Node:
    """One ``mariadbd`` of the cluster."""

    def __init__(self, root, index, ports):
        self.index = index
        self.dir = os.path.join(root, 'node%d' % index)
        self.datadir = os.path.join(self.dir, 'data')
        self.socket = os.path.join(self.dir, 'mysqld.sock')
        self.log_path = os.path.join(self.dir, 'error.log')
        self.port, self.gcomm_port, self.ist_port, self.sst_port = ports
        self.process = None

    def url(self, database=''):
        return 'mysql+pymysql://root@127.0.0.1:%d/%s' % (self.port, database)

    def options(self, cluster_address):
        provider_options = ';'.join([
            'gmcast.listen_addr=tcp://127.0.0.1:%d' % self.gcomm_port,
            'ist.recv_addr=127.0.0.1:%d' % self.ist_port,
            'gcache.size=32M',
            # Loopback: no need to wait for a slow network.
            'evs.suspect_timeout=PT5S', 'evs.inactive_timeout=PT10S',
            'pc.wait_prim_timeout=PT30S',
        ])
        user = ['--user=%s' % _user()] if os.geteuid() == 0 else []
        return [
            '--no-defaults', *user,
            '--datadir=%s' % self.datadir, '--socket=%s' % self.socket,
            '--pid-file=%s' % os.path.join(self.dir, 'mysqld.pid'),
            '--log-error=%s' % self.log_path,
            '--bind-address=127.0.0.1', '--port=%d' % self.port,
            '--tmpdir=%s' % self.dir,
            '--skip-name-resolve', '--skip-log-bin',
            '--binlog-format=ROW', '--default-storage-engine=InnoDB',
            '--innodb-autoinc-lock-mode=2',
            '--innodb-buffer-pool-size=32M', '--innodb-log-file-size=16M',
            '--innodb-flush-log-at-trx-commit=0',
            '--max-connections=200',
            '--character-set-server=utf8mb4',
            '--collation-server=utf8mb4_general_ci',
            '--wsrep-on=ON', '--wsrep-provider=%s' % PROVIDER,
            '--wsrep-cluster-name=cyborg-test',
            '--wsrep-cluster-address=%s' % cluster_address,
            '--wsrep-node-name=node%d' % self.index,
            '--wsrep-node-address=127.0.0.1:%d' % self.gcomm_port,
            '--wsrep-node-incoming-address=127.0.0.1:%d' % self.port,
            '--wsrep-sst-method=rsync',
            '--wsrep-sst-receive-address=127.0.0.1:%d' % self.sst_port,
            '--wsrep-provider-options=%s' % provider_options,
        ]

    def install(self):
        os.makedirs(self.datadir)
        user = ['--user=%s' % _user()] if os.geteuid() == 0 else []
        subprocess.run(
            [INSTALL_DB, '--no-defaults', *user, '--datadir=%s' % self.datadir,
             '--auth-root-authentication-method=normal',
             '--skip-test-db'],
            check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def prepare_joiner(self):
        """An empty data directory for the state transfer. Run as root,
        rsync's daemon writes as ``nobody``: the directory is reachable
        and that user's (mariadbd, as root, reads it all the same)."""
        os.makedirs(self.datadir)
        if os.geteuid() == 0:
            import pwd
            nobody = pwd.getpwnam('nobody')
            for path in (os.path.dirname(self.dir), self.dir):
                os.chmod(path, 0o755)
            os.chown(self.datadir, nobody.pw_uid, nobody.pw_gid)

    def start(self, cluster_address, bootstrap=False):
        args = [MARIADBD, *self.options(cluster_address)]
        if bootstrap:
            args.append('--wsrep-new-cluster')
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)

    def running(self):
        return self.process is not None and self.process.poll() is None

    def log_tail(self, size=3000):
        try:
            with open(self.log_path, errors='replace') as f:
                return f.read()[-size:]
        except OSError:
            return ''

    def status(self, name):
        """The value of the wsrep status variable ``name``, or None when
        the node does not answer."""
        engine = sa.create_engine(self.url(), poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as connection:
                row = connection.execute(
                    sa.text('SHOW STATUS LIKE :name'), {'name': name}).first()
                return row[1] if row else None
        except sa.exc.DBAPIError:
            return None
        finally:
            engine.dispose()

    def state(self):
        """The node's membership and state, for error messages."""
        return ', '.join(
            '%s=%s' % (name, self.status(name))
            for name in ('wsrep_cluster_status', 'wsrep_local_state_comment',
                         'wsrep_cluster_size', 'wsrep_ready'))

    def tables(self, database):
        """The names of the tables of ``database`` on this node, a set;
        None if the node has no such database. A causal read: it waits
        until the node applied every write committed in the cluster
        before it, the creation of databases and tables on other nodes
        included."""
        engine = sa.create_engine(self.url(), poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as connection:
                connection.execute(sa.text('SET SESSION wsrep_sync_wait = 1'))
                params = {'database': database}
                if connection.execute(_SCHEMA, params).first() is None:
                    return None
                return {row[0] for row in connection.execute(_TABLES, params)}
        finally:
            engine.dispose()

    def wait_tables(self, database, expected, timeout=APPLY_TIMEOUT):
        """Wait until ``tables(database)`` is ``expected``; fail naming
        the node's wsrep state (a node out of the primary component
        applies nothing) if it is not within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                seen = self.tables(database)
            except sa.exc.DBAPIError as e:
                seen = 'unknown (%s)' % e.orig
            if seen == expected:
                return
            if time.monotonic() >= deadline or not self.running():
                break
            time.sleep(0.2)
        raise RuntimeError(
            'galera node%d did not apply database %s in %ss: its tables '
            'are %s, not %s; %s; running: %s\n%s'
            % (self.index, database, timeout, seen, expected, self.state(),
               self.running(), self.log_tail()))

    def wait_synced(self, size, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise RuntimeError('galera node%d exited:\n%s'
                                   % (self.index, self.log_tail()))
            if (self.status('wsrep_local_state_comment') == 'Synced'
                    and self.status('wsrep_cluster_size') == str(size)):
                return
            time.sleep(0.5)
        raise RuntimeError('galera node%d did not join in %ds:\n%s'
                           % (self.index, timeout, self.log_tail()))

    def stop(self):
        if not self.running():
            return
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait(10)


def _user():
    import pwd
    return pwd.getpwuid(os.geteuid()).pw_name


class Cluster(fixtures.Fixture):
    """Three Galera nodes on loopback; ``nodes`` once set up."""

    def __init__(self, test, size=NODES):
        super().__init__()
        self.test = test
        self.size = size
        self.nodes = []

    def _setUp(self):
        problem = missing()
        if problem:
            services.unavailable(self.test, problem)
        root = self.useFixture(fixtures.TempDir()).path
        ports = _free_ports(self.size * PORTS_PER_NODE)
        self.nodes = [
            Node(root, i, ports[i * PORTS_PER_NODE:(i + 1) * PORTS_PER_NODE])
            for i in range(self.size)]
        address = 'gcomm://' + ','.join('127.0.0.1:%d' % n.gcomm_port
                                        for n in self.nodes)
        for node in self.nodes:
            self.addCleanup(node.stop)
        first = self.nodes[0]
        first.install()
        first.start(address, bootstrap=True)
        first.wait_synced(1)
        # The joiners receive the first node's data (rsync state
        # transfer), one after the other.
        for size, node in enumerate(self.nodes[1:], 2):
            node.prepare_joiner()
            node.start(address)
            node.wait_synced(size)

    def create_database(self):
        """A new empty database, on every node once this returns; its
        name."""
        name = 'cyborg_test_%s' % uuid.uuid4().hex[:12]
        engine = sa.create_engine(self.nodes[0].url(),
                                  poolclass=sa.pool.NullPool)
        with engine.connect() as connection:
            connection.execute(sa.text('CREATE DATABASE %s' % name))
        engine.dispose()
        self.wait_replicated(name)
        return name

    def wait_replicated(self, database):
        """Wait until every node has ``database`` with the tables the
        first node has. A DDL statement returns once the node that ran it
        applied it; the others apply it a moment later, and a connection
        to a database they lack yet fails (not retried by oslo.db), as
        does an INSERT into a table they lack (inserts are no causal
        reads under wsrep_sync_wait = 1)."""
        expected = self.nodes[0].tables(database)
        for node in self.nodes[1:]:
            node.wait_tables(database, expected)


_ROUTE = threading.local()


def current_node():
    return getattr(_ROUTE, 'node', None) or 0


@contextlib.contextmanager
def on_node(index):
    """The calling thread's transactions run on node ``index``."""
    previous = getattr(_ROUTE, 'node', None)
    _ROUTE.node = index
    try:
        yield
    finally:
        _ROUTE.node = previous


def route(manager, index):
    """Every public method of ``manager`` (a conductor manager) runs its
    transactions on node ``index``; RPC finds these wrappers, which keep
    the methods' attributes (signing markers)."""
    for name in dir(type(manager)):
        method = getattr(manager, name)
        if name.startswith('_') or not inspect.isroutine(method):
            continue

        def routed(*args, __method=method, **kwargs):
            with on_node(index):
                return __method(*args, **kwargs)
        setattr(manager, name, functools.wraps(method)(routed))
    return manager


class _RoutedFactory(enginefacade._TestTransactionFactory):
    """enginefacade's test factory with one engine per node: a
    transaction's connection and session come from the engine of the
    calling thread's node."""

    def __init__(self, engines_, from_factory):
        maker_kwargs = from_factory._maker_args_for_conf(None)
        self._makers = [orm.get_maker(engine=e, **maker_kwargs)
                        for e in engines_]
        self._engines = list(engines_)
        super().__init__(engines_[0], self._makers[0], apply_global=False,
                         from_factory=from_factory)

    def _create_connection(self, mode):
        return self._engines[current_node()].connect()

    def _create_session(self, mode, bind=None):
        kw = {'bind': bind} if bind else {}
        return self._makers[current_node()](**kw)


class Database(fixtures.Fixture):
    """A fresh database on ``cluster``, cyborg's engine pointing at every
    node of it (see ``on_node``); schema from the models, on every node
    once set up. ``name`` is the database's name, ``engines`` one engine
    per node."""

    def __init__(self, cluster, sync_wait=1):
        super().__init__()
        self.cluster = cluster
        self.sync_wait = sync_wait
        self.engines = []
        self.name = None

    def _setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.db.api._LAST_UNAVAILABLE', [None]))
        self.name = name = self.cluster.create_database()
        for node in self.cluster.nodes:
            # Causal reads, as a deployment that spreads conductors over
            # nodes sets (doc/source/admin/galera.rst): a read waits until
            # its node applied every write committed before it anywhere.
            engine = engines.create_engine(
                db_api.connection_url(node.url(name)),
                mysql_wsrep_sync_wait=self.sync_wait)
            self.addCleanup(engine.dispose)
            cyborg_fixtures.forbid_api_writes(engine)
            self.engines.append(engine)
        self.engine = self.engines[0]
        models.Base.metadata.create_all(self.engine)
        migration.stamp('head', engine=self.engine)
        self.cluster.wait_replicated(name)
        manager = db_api.context_manager
        existing = manager._factory
        if not existing._started:
            existing._start()
        self.addCleanup(manager.patch_factory(
            _RoutedFactory(self.engines, existing)))


_SHARED = []
_SHARED_LOCK = threading.Lock()


def shared_cluster(test):
    """The cluster of this process: started by the first test that asks
    (about 25 s), then shared by every test, and stopped when the
    process exits. Each test takes a database of its own in it."""
    problem = missing()
    if problem:
        services.unavailable(test, problem)
    with _SHARED_LOCK:
        if not _SHARED:
            cluster = Cluster(None)
            try:
                cluster.setUp()
            except Exception as e:
                cluster.cleanUp()
                _SHARED.append(e)
            else:
                atexit.register(cluster.cleanUp)
                _SHARED.append(cluster)
    if isinstance(_SHARED[0], Exception):
        raise RuntimeError('the Galera cluster did not start: %s'
                           % _SHARED[0])
    return _SHARED[0]
