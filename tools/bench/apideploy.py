"""The cyborg deployments ``tools/bench/api`` starts and measures.

:func:`start_aio` starts ``cyborg-aio`` as the README starts it;
:func:`start_split` the split daemons, each in a process of its own
(Placement, cyborg-conductor, cyborg-agent, cyborg-api), as a
deployment runs them. Every cyborg daemon serves its metrics
(``[metrics]``, a loopback port of its own), which the benchmark
scrapes (:mod:`scrape`).
"""

import json
import os
import subprocess
import sys
import time
import uuid

import requests

import benchlib
import bootcycle
import scrape

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
#: The benchmark script, which serves Placement (``--serve-placement``).
API_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'api')
#: What starts the line a server process prints once it is ready.
READY = '@@ '


#: How long the all-in-one may take to start and offer its device.
AIO_START_S = 180


def metrics_config(state_dir, name, port):
    """A config file of one daemon's ``[metrics]`` (on ``port``), given
    after the shared one; its path."""
    return benchlib.write_config(
        os.path.join(state_dir, 'metrics-%s.conf' % name),
        {'metrics': scrape.metrics_options(port)})


def aio_config(state_dir, nova, db_url, metrics_port):
    """The all-in-one's config file: the benchmark's Nova, a compute
    node provider of its own (this Nova makes none), a server's database
    if asked, its metrics on ``metrics_port`` (None: metrics off). The
    file's path."""
    lines = ['[aio]', 'compute_node_provider = cyborg']
    if metrics_port:
        lines += ['[metrics]'] + [
            '%s = %s' % item
            for item in scrape.metrics_options(metrics_port).items()]
    if nova is not None:
        lines += ['[nova]', 'auth_type = admin_token',
                  'endpoint = %s' % nova.endpoint, 'token = nova-token']
    if db_url:
        lines += ['[database]', 'connection = %s' % db_url]
    path = os.path.join(state_dir, 'aio.conf')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return path


def offered(base, deadline, check):
    """What a server process would have said of the deployment at
    ``base`` once it offers a device (None if it did not by
    ``deadline``); ``check()`` raises if its processes ended."""
    while time.monotonic() < deadline:
        check()
        try:
            ready = bootcycle.target_ready(base)
        except (requests.ConnectionError, RuntimeError):
            ready = None
        if ready and ready['rp_uuids']:
            return ready
        time.sleep(0.5)
    return None


def start_aio(args, nova, state_dir):
    """``cyborg-aio`` as the README starts it, in its own process, and
    what a server process would have said once its agent's device is in
    Placement. Its log goes to ``aio.log`` in ``state_dir``."""
    port = benchlib.free_port()
    metrics_port = benchlib.free_port() if args.metrics else None
    command = [sys.executable, '-m', 'cyborg.cmd.aio', '--port', str(port),
               '--state-dir', state_dir, '--config-file',
               aio_config(state_dir, nova, args.db_url, metrics_port)]
    env = dict(os.environ, PYTHONPATH=TOP)
    with open(os.path.join(state_dir, 'aio.log'), 'w') as log:
        server = subprocess.Popen(command, cwd=TOP, env=env,
                                  stdin=subprocess.PIPE, stdout=log,
                                  stderr=subprocess.STDOUT)

    def check():
        if server.poll() is not None:
            raise SystemExit('cyborg-aio exited with %s; see its log'
                             % server.returncode)
    ready = offered('http://127.0.0.1:%d' % port,
                    time.monotonic() + AIO_START_S, check)
    if ready is None:
        server.kill()
        raise SystemExit('cyborg-aio offered no device in %d s'
                         % AIO_START_S)
    database = (args.db_url or 'sqlite').split(':')[0].split('+')[0]
    return server, dict(ready, pid=server.pid, database=database, metrics={
        'aio': 'http://127.0.0.1:%d' % metrics_port} if metrics_port else {})


#: The split daemons' host: its agent's, its compute node provider's.
SPLIT_HOST = 'bench-split'
RABBIT = 'rabbit://guest:guest@127.0.0.1:5672/'


def split_config(state_dir, nova, db_url, transport_url, api_port,
                 placement_url, security):
    """The one config file of the split daemons; its path."""
    sections = {
        'DEFAULT': {'host': SPLIT_HOST, 'transport_url': transport_url,
                    'rpc_topic_prefix': 'bench-%s-' % uuid.uuid4().hex[:8],
                    'auth_strategy': 'noauth', 'state_path': state_dir},
        'database': {'connection': db_url},
        'api': {'host_ip': '127.0.0.1', 'port': api_port,
                'api_workers': 1},
        'agent': {'resource_provider_name': SPLIT_HOST},
        'security': security,
        'placement': {'auth_type': 'admin_token', 'endpoint': placement_url,
                      'token': 'admin'},
    }
    if nova is not None:
        sections['nova'] = {'auth_type': 'admin_token',
                            'endpoint': nova.endpoint, 'token': 'nova-token'}
    return benchlib.write_config(os.path.join(state_dir, 'cyborg.conf'),
                                 sections)


def serve_placement(args):
    """Placement in a process of its own (``--serve-placement``): the
    embedded one's application, on --db-url (SQLite in --state-dir when
    none), behind a threaded WSGI server of ours; stops when stdin
    closes."""
    from cyborg.aio import placement as aio_placement
    from cyborg.api import server as api_server
    app = aio_placement.build_app(args.state_dir, args.db_url)
    server = api_server.WSGIServer(app, '127.0.0.1', 0, 8,
                                   name='bench-placement')
    server.start()
    print(READY + json.dumps({'port': server.port}), flush=True)
    sys.stdin.read()
    server.stop()
    return 0


class Daemons:
    """Processes started from TOP, each logging to a file of its own in
    ``state_dir``; stopped together."""

    def __init__(self, state_dir):
        self.state_dir = state_dir
        self.processes = {}

    def start(self, name, command, stdout=None):
        env = dict(os.environ, PYTHONPATH=TOP)
        with open(os.path.join(self.state_dir, name + '.log'), 'w') as log:
            process = subprocess.Popen(
                [sys.executable] + command, cwd=TOP, env=env,
                stdin=subprocess.PIPE, stdout=stdout or log,
                stderr=log, text=True)
        self.processes[name] = process
        return process

    def check(self):
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise SystemExit('%s exited with %s; see its log in %s'
                                 % (name, process.returncode,
                                    self.state_dir))

    def wait_for_log(self, name, text, deadline):
        path = os.path.join(self.state_dir, name + '.log')
        while time.monotonic() < deadline:
            self.check()
            with open(path) as f:
                if text in f.read():
                    return
            time.sleep(0.2)
        raise SystemExit('%s did not log %r; see its log in %s'
                         % (name, text, self.state_dir))

    def stop(self):
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def start_split(args, nova, state_dir, daemons):
    """Placement, cyborg-conductor, cyborg-agent and cyborg-api, each in
    its own process, and what a server process would have said once the
    agent's device is in Placement."""
    placement_url = args.placement_db_url
    placement = daemons.start('placement', [
        API_SCRIPT, '--serve-placement', '--state-dir',
        state_dir] + (['--db-url', placement_url] if placement_url else []),
        stdout=subprocess.PIPE)
    for line in placement.stdout:
        if line.startswith(READY):
            placement_port = json.loads(line[len(READY):])['port']
            break
    else:
        daemons.check()
    placement_endpoint = 'http://127.0.0.1:%d' % placement_port
    # The compute node provider, as nova-compute would have made it.
    response = requests.post(
        placement_endpoint + '/resource_providers', timeout=60,
        json={'name': SPLIT_HOST, 'uuid': str(uuid.uuid4())},
        headers={'X-Auth-Token': 'admin',
                 'OpenStack-API-Version': 'placement 1.20'})
    response.raise_for_status()
    port = benchlib.free_port()
    conf = split_config(state_dir, nova, args.db_url, args.transport_url,
                        port, placement_endpoint,
                        benchlib.daemon_keys(state_dir, hosts=[SPLIT_HOST]))
    subprocess.run([sys.executable, '-m', 'cyborg.cmd.dbsync',
                    '--config-file', conf, 'upgrade'], cwd=TOP,
                   env=dict(os.environ, PYTHONPATH=TOP), check=True,
                   stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + AIO_START_S
    metrics = {}
    for name in ('conductor', 'agent', 'api'):
        argv = ['-m', 'cyborg.cmd.%s' % name, '--config-file', conf]
        if args.metrics:
            metrics_port = benchlib.free_port()
            metrics[name] = 'http://127.0.0.1:%d' % metrics_port
            argv += ['--config-file',
                     metrics_config(state_dir, name, metrics_port)]
        daemons.start(name, argv)
        if name == 'conductor':
            # Its queue exists once it started: the broker drops what
            # is sent to a topic before.
            daemons.wait_for_log(name, 'Started ConductorManager',
                                 deadline)
    ready = offered('http://127.0.0.1:%d' % port, deadline, daemons.check)
    if ready is None:
        raise SystemExit('the split daemons offered no device in %d s; '
                         'see their logs in %s' % (AIO_START_S, state_dir))
    database = (args.db_url or 'sqlite').split(':')[0].split('+')[0]
    return dict(ready, database=database, metrics=metrics, pids={
        name: process.pid for name, process in daemons.processes.items()})
