"""The reference deployment (doc/source/admin/reference-deployment.rst)
on loopback, for the test that breaks it one node at a time.

The page's snippets are read from the page (``snippets``) and given this
machine's addresses (``localize``): what runs is what the page shows.
Each part is a small class that starts processes of the test's own and
kills them in the test's cleanups:

* ``HAProxy``: Debian's ``haproxy`` with the page's ``listen`` sections,
  and its stats socket to see which servers it takes as up;
* ``UwsgiAPI``: one ``cyborg.wsgi.api:application`` instance under uWSGI
  with the page's ini file;
* ``Galera``: ``galera.Cluster``'s three nodes, a database with the
  schema on them, and the user HAProxy's check logs in as;
* a broker: anything with ``transport_url()``, ``apply_policy(argv)``,
  ``kill_one()`` (the index of the node killed) and ``restart(index)``,
  and ``name`` and ``nodes``: ``ClusterRabbit`` is the three-node
  cluster of ``rabbitcluster``, ``SingleRabbit`` one
  ``faults.PrivateRabbit`` node;
* ``BindStorm``: threads that each play Nova booting servers one after
  the other through HAProxy, recording every call.
"""

import collections
import configparser
import csv
import io
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid

import requests
import sqlalchemy as sa

from cyborg.db import migration
from cyborg.db import models
from cyborg.tests import services
from cyborg.tests.functional import daemons
from cyborg.tests.functional import doc_commands
from cyborg.tests.functional import faults
from cyborg.tests.functional import galera
from cyborg.tests.functional import nova
from cyborg.tests.functional import rabbitcluster

PAGE = 'doc/source/admin/reference-deployment.rst'
#: The page's addresses: HAProxy's (the VIP) and the controllers'.
VIP = '192.0.2.10'
CONTROLLERS = ('192.0.2.11', '192.0.2.12', '192.0.2.13')
API_PORT = 6666
DB_PORT = 3306


def page():
    with open(os.path.join(doc_commands.TOP, PAGE)) as f:
        return f.read()


def snippets():
    """The page's HAProxy sections, uwsgi ini, cyborg.conf options and
    RabbitMQ policy command: {'haproxy': text, 'uwsgi': text, 'conf':
    {section: {option: value}}, 'policy': [argv of rabbitmqctl]}."""
    found = {}
    for _, language, block in doc_commands.literal_blocks(page()):
        text = '\n'.join(block) + '\n'
        if language == 'text' and 'listen cyborg_api' in text:
            found['haproxy'] = text
        elif language == 'ini' and text.startswith('[uwsgi]'):
            found['uwsgi'] = text
        elif language == 'ini':
            # [DEFAULT] as a section like the others: its options are
            # not every section's.
            parser = configparser.RawConfigParser(default_section='')
            parser.optionxform = str
            parser.read_string(text)
            found['conf'] = {section: dict(parser.items(section))
                             for section in parser.sections()}
        elif language == 'console' and 'set_policy' in text:
            command = shlex.split(
                text.removeprefix('$ ').replace('\\\n', ' '))
            found['policy'] = command[1:]
    missing = {'haproxy', 'uwsgi', 'conf', 'policy'} - set(found)
    if missing:
        raise AssertionError('%s lacks its %s snippet(s)' % (
            PAGE, ', '.join(sorted(missing))))
    return found


def listen_section(text, name):
    """The ``listen name`` section of HAProxy's ``text`` (up to the next
    unindented line), for a deployment with only some of the page's
    proxies (the peer suite's has the API's alone)."""
    found = re.search(r'^listen %s\n(?:[ \t]+.*\n|\n)*' % re.escape(name),
                      text, re.M)
    if found is None:
        raise AssertionError('no "listen %s" section in:\n%s' % (name, text))
    return found.group(0).rstrip('\n') + '\n'


def api_ini(ini_text, port, config_file):
    """The page's uwsgi file for an API instance on 127.0.0.1:``port``,
    with this interpreter's virtualenv and ``config_file``."""
    return localize(
        ini_text,
        {'%s:%d' % (CONTROLLERS[0], API_PORT): ('127.0.0.1', port)},
        {'/opt/cyborg/venv': os.path.dirname(os.path.dirname(
            sys.executable)),
         '/etc/cyborg/cyborg.conf': config_file})


def localize(text, addresses, paths=()):
    """``text`` with each ``host:port`` of ``addresses`` ({page's address:
    (host, port)}) and each path of ``paths`` ({page's: ours})
    replaced; fails on a page address left over, so a server added to
    the page is not silently dropped."""
    for old, (host, port) in addresses.items():
        text = text.replace(old, '%s:%d' % (host, port))
    for old, new in dict(paths).items():
        text = text.replace(old, new)
    left = re.findall(r'192\.0\.2\.\d+(?::\d+)?', text)
    if left:
        raise AssertionError('no local address for %s' % sorted(set(left)))
    return text


def wait_until(predicate, timeout, interval=0.2, what='condition'):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError('%s not met within %s s' % (what, timeout))
        time.sleep(interval)


class HAProxy:
    """HAProxy with the page's ``listen`` sections, HAProxy's own global
    and defaults sections (which the page leaves to the deployer) and a
    stats socket of the test's."""

    GLOBAL = ('global\n'
              '    maxconn 4000\n'
              '    log stdout format raw local0 info\n'
              '    stats socket {socket} mode 600 level admin\n'
              '\n'
              'defaults\n'
              '    log global\n'
              '    timeout connect 5s\n'
              '    timeout client 60s\n'
              '    timeout server 60s\n'
              '\n')

    def __init__(self, test, directory, listen_sections):
        self.test = test
        self.binary = shutil.which('haproxy') or '/usr/sbin/haproxy'
        if not os.path.exists(self.binary):
            services.unavailable(
                test, 'haproxy is not installed (apt-get install haproxy; '
                '.ci/run installs it)')
        self.directory = directory
        self.socket = os.path.join(directory, 'haproxy.sock')
        self.config = os.path.join(directory, 'haproxy.cfg')
        with open(self.config, 'w') as f:
            f.write(self.GLOBAL.format(socket=self.socket) + listen_sections)
        check = subprocess.run(
            [self.binary, '-c', '-f', self.config], capture_output=True,
            text=True)
        if check.returncode:
            raise AssertionError('haproxy refuses its configuration:\n%s%s'
                                 % (check.stdout, check.stderr))
        self.daemon = daemons.Daemon(
            test, 'haproxy', ['-db', '-f', self.config],
            os.path.join(directory, 'haproxy.log'), command=[self.binary])
        wait_until(lambda: os.path.exists(self.socket), 30,
                   what='haproxy stats socket')

    def command(self, text):
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(self.socket)
            sock.sendall(text.encode() + b'\n')
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b''.join(chunks).decode()

    def stats(self):
        """{(proxy, server): row} of ``show stat``'s servers."""
        text = self.command('show stat').lstrip('# ')
        rows = csv.DictReader(io.StringIO(text))
        return {(row['pxname'], row['svname']): row for row in rows
                if row['svname'] not in ('FRONTEND', 'BACKEND')}

    def up(self, proxy):
        """The servers of ``proxy`` HAProxy takes as up, in order."""
        return [server for (name, server), row in self.stats().items()
                if name == proxy and row['status'].startswith('UP')]

    def writer(self, proxy='mariadb'):
        """The server HAProxy sends new connections of ``proxy`` to: the
        first active server up, else the first backup up."""
        rows = [(server, row) for (name, server), row in self.stats().items()
                if name == proxy and row['status'].startswith('UP')]
        active = [s for s, row in rows if row['bck'] != '1']
        backup = [s for s, row in rows if row['bck'] == '1']
        return (active or backup or [None])[0]


class UwsgiAPI:
    """One API instance: uWSGI with the page's ini, given this machine's
    address, virtualenv and configuration file."""

    def __init__(self, test, directory, name, ini_text, port, config_file):
        self.name = name
        self.port = port
        self.binary = os.path.join(os.path.dirname(sys.executable), 'uwsgi')
        if not os.path.exists(self.binary):
            self.binary = shutil.which('uwsgi')
        if not self.binary:
            services.unavailable(test, 'uWSGI is not installed (pip install '
                                 'uWSGI: test-requirements.txt)')
        self.ini = os.path.join(directory, '%s-uwsgi.ini' % name)
        with open(self.ini, 'w') as f:
            f.write(ini_text)
        self.test = test
        self.log = os.path.join(directory, '%s-uwsgi.log' % name)
        self.daemon = None
        self.starts = 0

    def start(self):
        self.starts += 1
        self.daemon = daemons.Daemon(
            self.test, 'uwsgi-%s-%d' % (self.name, self.starts),
            ['--ini', self.ini], '%s.%d' % (self.log, self.starts),
            command=[self.binary])
        return self

    def wait_ready(self, timeout):
        url = 'http://127.0.0.1:%d/healthcheck' % self.port
        wait_until(lambda: self._answers(url), timeout, what=url)

    def _answers(self, url):
        if not self.daemon.running():
            raise AssertionError('%s exited:\n%s' % (
                self.name, self.daemon.output()[-3000:]))
        try:
            return requests.get(url, timeout=5).status_code == 200
        except requests.RequestException:
            return False

    def processes(self):
        pid = self.daemon.process.pid
        return [pid] + daemons.children(pid)

    def kill(self, timeout=30):
        """SIGKILL to the master and its workers, as a machine lost;
        returns once the instance is gone: no thread of a process of its
        group is left, and nothing accepts a connection on its port any
        more. (A worker runs threads: its main thread can show as a
        zombie while the others still exit, holding the process's files,
        the listening socket among them. With a wait for the main
        threads only, HAProxy still connected to the port after it, and
        the request got a 502 the test took for one sent after the
        instance was gone: 1 run in 2 here, and 4 in 6 on a loaded
        machine.)"""
        group = self.daemon.process.pid
        self.daemon.kill()
        wait_until(lambda: not _group_running(group), timeout,
                   interval=0.01, what='the uwsgi processes of %s gone'
                   % self.name)
        wait_until(lambda: _refused('127.0.0.1', self.port), timeout,
                   interval=0.01, what='the port of %s closed' % self.name)


def _stat(pid):
    """The fields of ``/proc/<pid>/stat`` after the command's name
    (state, ppid, pgrp, ...), or None when there is no such process."""
    try:
        with open('/proc/%s/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return None


def _group_running(group):
    """Whether a thread of a process of process group ``group`` still
    runs (is not a zombie)."""
    for pid in os.listdir('/proc'):
        fields = _stat(pid) if pid.isdigit() else None
        if not fields or fields[2] != str(group):
            continue
        try:
            tasks = os.listdir('/proc/%s/task' % pid)
        except OSError:
            continue
        for task in tasks:
            state = _stat('%s/task/%s' % (pid, task))
            if state and state[0] != 'Z':
                return True
    return False


def _refused(host, port):
    """Whether a connection to ``host:port`` is refused."""
    try:
        with socket.create_connection((host, port), timeout=1):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


class Galera:
    """The three nodes of ``galera.Cluster``, a database of the test's
    on them with the schema at head, and the user HAProxy's check logs
    in as."""

    def __init__(self, test):
        self.cluster = test.useFixture(galera.Cluster(test))
        self.nodes = self.cluster.nodes
        self.name = self.cluster.create_database()
        engine = sa.create_engine(self.nodes[0].url(self.name),
                                  poolclass=sa.pool.NullPool)
        with engine.begin() as connection:
            connection.execute(sa.text(
                "CREATE USER IF NOT EXISTS 'haproxy'@'127.0.0.1'"))
        models.Base.metadata.create_all(engine)
        migration.stamp('head', engine=engine)
        engine.dispose()
        self.cluster.wait_replicated(self.name)

    def addresses(self):
        return {'%s:%d' % (ip, DB_PORT): ('127.0.0.1', node.port)
                for ip, node in zip(CONTROLLERS, self.nodes, strict=True)}

    def node(self, server):
        """The node of HAProxy's server ``db-N``."""
        return self.nodes[int(server.rsplit('-', 1)[1]) - 1]


def _on_vhost(argv, vhost):
    """The page's ``rabbitmqctl`` arguments, on ``vhost`` instead of the
    page's."""
    argv = list(argv)
    for flag in ('-p', '--vhost'):
        if flag in argv:
            argv[argv.index(flag) + 1] = vhost
    return argv


class SingleRabbit:
    """One private RabbitMQ node: a broker for the deployment where no
    cluster can be had. Killing it stops every client's messaging until
    it is back (``restart``), so its kill and restart make one fault."""

    name = 'one RabbitMQ node'
    nodes = 1

    def __init__(self, test):
        self.node = faults.PrivateRabbit.started(test)

    def transport_url(self):
        return self.node.url

    def apply_policy(self, argv):
        return self.node.ctl(*_on_vhost(argv, '/'))

    def kill_one(self):
        self.node.kill()
        return 0

    def restart(self, index):
        if not self.node.start():
            raise AssertionError(self.node.problem)


class ClusterRabbit:
    """The three-node cluster of ``rabbitcluster.RabbitCluster``, every
    client listing the three nodes; ``kill_one`` kills the node that
    leads the conductors' queue."""

    name = 'three RabbitMQ nodes, quorum queues'
    nodes = 3

    def __init__(self, test, queue='cyborg-conductor'):
        self.cluster = rabbitcluster.RabbitCluster.started(test)
        self.queue = queue

    def transport_url(self):
        return self.cluster.transport_url()

    def apply_policy(self, argv):
        return self.cluster.ctl(*_on_vhost(argv, '/'))

    def leader(self):
        """The node leading the conductors' queue (it is a quorum queue
        with a leader, or this fails)."""
        return self.cluster.leader_of(self.queue, '/')

    def queue_types(self):
        return collections.Counter(
            kind for kind, _leader, _members
            in self.cluster.queues('/').values())

    def kill_one(self):
        index = self.leader()
        self.cluster.kill(index)
        return index

    def restart(self, index):
        if not self.cluster.start(index):
            raise AssertionError(self.cluster.problem)


def _status(response):
    return 'error' if response is None else response.status_code


Call = collections.namedtuple('Call', 'method path start end status error')


class BindStorm:
    """``workers`` threads, each Nova booting servers one after the other
    through ``base`` (HAProxy): the ARQs of ``profile``, bound to one of
    ``providers`` (device rp uuids) round robin, polled until resolved.
    Every call is kept (``calls``); each server's end (``ends``:
    'Bound', 'BindFailed', or the error that ended it)."""

    POLL_TIMEOUT = 60

    def __init__(self, base, profile, providers, hostname_of, workers=4,
                 alive=3):
        self.base = base
        self.profile = profile
        self.providers = providers
        self.hostname_of = hostname_of
        self.workers = workers
        self.alive = alive
        self.calls = []
        self.ends = collections.Counter()
        self.instances = []
        self._lock = threading.Lock()
        self._next = 0
        self._stop = threading.Event()
        self._threads = []

    def call(self, method, path, body=None):
        start = time.monotonic()
        status = error = None
        response = None
        try:
            response = requests.request(
                method, self.base + path, headers=nova.USER_AND_SERVICE,
                timeout=90,
                data=None if body is None else json.dumps(body))
            status = response.status_code
        except requests.RequestException as e:
            error = type(e).__name__
        with self._lock:
            self.calls.append(Call(method, path.split('?')[0], start,
                                   time.monotonic(), status, error))
        return response

    def _provider(self):
        with self._lock:
            provider = self.providers[self._next % len(self.providers)]
            self._next += 1
        return provider

    def boot(self):
        """One server: the end of its binds, and its instance uuid
        (None if its ARQs were not created)."""
        response = self.call('POST', nova.ARQS,
                             {'device_profile_name': self.profile})
        if response is None or response.status_code != 201:
            return 'create %s' % _status(response), None
        arqs = response.json()['arqs']
        instance = str(uuid.uuid4())
        with self._lock:
            self.instances.append(instance)
        provider = self._provider()
        patch = {arq['uuid']: [
            {'op': 'add', 'path': '/hostname',
             'value': self.hostname_of[provider]},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': provider},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
            for arq in arqs}
        response = self.call('PATCH', nova.ARQS, patch)
        if response is None or response.status_code != 202:
            return 'bind %s' % _status(response), instance
        deadline = time.monotonic() + self.POLL_TIMEOUT
        query = '%s?instance=%s&bind_state=resolved' % (nova.ARQS, instance)
        while time.monotonic() < deadline:
            response = self.call('GET', query)
            if response is not None and response.status_code == 200:
                found = {arq['state'] for arq in response.json()['arqs']}
                return (found.pop() if len(found) == 1 else str(found),
                        instance)
            time.sleep(0.1)
        return 'unresolved', instance

    def delete(self, instance):
        """The server deleted: nova-compute deletes its ARQs."""
        self.call('DELETE', '%s?instance=%s' % (nova.ARQS, instance))

    def _run(self):
        servers = []
        while not self._stop.is_set():
            end, instance = self.boot()
            with self._lock:
                self.ends[end] += 1
            if instance:
                servers.append(instance)
            # A worker's servers live a while: at most ``alive`` at once,
            # the oldest deleted first, so that the storm goes on within
            # the cards' attach handles.
            while len(servers) > self.alive:
                self.delete(servers.pop(0))

    def start(self):
        self._stop.clear()
        self._threads = [threading.Thread(target=self._run, daemon=True)
                         for _ in range(self.workers)]
        for thread in self._threads:
            thread.start()

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(self.POLL_TIMEOUT + 100)
        self._threads = []

    def take(self):
        """The calls and ends since the last take; both cleared."""
        with self._lock:
            calls, self.calls = self.calls, []
            ends, self.ends = self.ends, collections.Counter()
            instances, self.instances = self.instances, []
        return calls, ends, instances
