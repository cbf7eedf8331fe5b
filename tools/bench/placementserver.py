"""Placement as the benchmarks deploy it, counting its requests.

A server process of ``tools/bench/report_storm --serve-placement``
(:class:`Child`, also started by ``tools/bench/scale``) runs Placement:
the all-in-one's embedded one (:func:`serve_placement`), several worker
processes of a threaded WSGI server of ours sharing one port, or uWSGI's
or gunicorn's workers (:func:`serve_placement_workers`). Every request
is counted by kind (method and path, ids left out), and each line the
harness writes on the process's stdin is answered with the counts.
"""

import collections
import http.client
import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time

from oslo_utils import uuidutils

from cyborg.aio import placement as aio_placement
from cyborg.api import server as api_server

import benchlib

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
STORM = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     'report_storm')


# What a server process says to this one starts its line with MARK; the
# libraries it runs may print other lines.
MARK = '@@ '


def say(value):
    print(MARK + json.dumps(value), flush=True)


def answer_on_stdin(stats):
    """Serve ``stats()`` as one JSON line per line read; return at EOF."""
    for _line in sys.stdin:
        say(stats())


class CountingApp:
    """Counts requests, by method and kind of path (uuids left out)."""

    def __init__(self, app):
        self.app = app
        self.counts = collections.Counter()
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        parts = [p for p in environ.get('PATH_INFO', '').split('/')
                 if p and not uuidutils.is_uuid_like(p)]
        kind = '%s /%s' % (environ['REQUEST_METHOD'], '/'.join(parts))
        with self.lock:
            self.counts[kind] += 1
        return self.app(environ, start_response)


def serve_placement(args):
    if args.placement_workers:
        return serve_placement_workers(args)
    app = CountingApp(aio_placement.build_app(args.state_dir))
    server = api_server.WSGIServer(app, '127.0.0.1', 0, 32,
                                   name='bench-placement')
    server.start()
    say({'endpoint': 'http://127.0.0.1:%d' % server.port})
    answer_on_stdin(lambda: {'requests': sum(app.counts.values()),
                             'kinds': dict(app.counts)})
    server.stop()


# Threads of each Placement worker process.
PLACEMENT_THREADS = 8


def placement_worker(args, port, pipe):
    """One Placement worker process: its own app and database engine,
    serving the shared port; answers its request counts on ``pipe``."""
    app = CountingApp(aio_placement.build_app(
        args.state_dir, args.placement_db_url, sync=False))
    server = api_server.WSGIServer(app, '127.0.0.1', port,
                                   PLACEMENT_THREADS, reuse_port=True,
                                   name='bench-placement')
    server.start()
    pipe.send('ready')
    while pipe.recv() == 'stats':
        with app.lock:
            pipe.send(dict(app.counts))
    server.stop()


# The WSGI file a WSGI server loads in each of its workers: Placement's
# application, counting requests by kind into a file per worker.
WSGI_APP = """
import collections, json, os, sys, threading, time
sys.path[:0] = %(path)r
from cyborg.aio import placement
from oslo_utils import uuidutils
_app = placement.build_app(%(state)r, %(url)r, sync=False)
_counts = collections.Counter()
_file = os.path.join(%(state)r, 'counts-%%d.json' %% os.getpid())
_lock = threading.Lock()
CPU = %(cpu)r


def _write_counts():
    # Written by a thread of the worker's own, every 0.2 s while requests
    # come, rather than on every request: the count is the harness's work,
    # not Placement's, and should cost the worker next to nothing.
    written = None
    while True:
        time.sleep(%(flush)r)
        with _lock:
            counts = dict(_counts)
        if counts != written:
            with open(_file + '.new', 'w') as f:
                json.dump(counts, f)
            os.replace(_file + '.new', _file)
            written = counts


threading.Thread(target=_write_counts, daemon=True).start()


def application(environ, start_response):
    parts = [p for p in environ.get('PATH_INFO', '').split('/')
             if p and not uuidutils.is_uuid_like(p)]
    kind = '%%s /%%s' %% (environ['REQUEST_METHOD'], '/'.join(parts))
    # The CPU time of this request's thread: what it cost Placement.
    start = time.thread_time()
    try:
        return list(_app(environ, start_response))
    finally:
        spent = time.thread_time() - start
        with _lock:
            _counts[kind] += 1
            _counts[CPU + kind] += spent
"""
#: What starts the keys of the CPU seconds of each kind of request.
CPU = 'cpu_s '
# How often a worker writes its counts; stats() waits longer than this.
COUNTS_FLUSH_S = 0.2


def serve_placement_server(args, port):
    """Placement under a WSGI server as deployments run it, in
    ``--placement-workers`` processes each loading the application
    itself: uWSGI (devstack's choice) behind its HTTP router with
    keep-alive, single-threaded workers; or gunicorn with
    ``--placement-threads`` threads per worker (upstream's reference
    setup runs its Placement so, with 1 worker and 4 threads)."""
    wsgi_file = os.path.join(args.state_dir, 'placement_wsgi.py')
    with open(wsgi_file, 'w') as f:
        f.write(WSGI_APP % {
            'path': [TOP], 'state': args.state_dir,
            'url': args.placement_db_url, 'flush': COUNTS_FLUSH_S,
            'cpu': CPU})
    bindir = os.path.dirname(sys.executable)
    if args.placement_server == 'uwsgi':
        command = [
            os.path.join(bindir, 'uwsgi'), '--http', '127.0.0.1:%d' % port,
            '--http-keepalive', '--wsgi-file', wsgi_file, '--master',
            '--processes', str(args.placement_workers), '--threads', '1',
            '--enable-threads', '--lazy-apps', '--die-on-term', '--need-app',
            '--disable-logging']
    else:
        command = [
            os.path.join(bindir, 'gunicorn'), '--no-control-socket',
            '-b', '127.0.0.1:%d' % port, '-w', str(args.placement_workers),
            '--threads', str(args.placement_threads), '--chdir',
            args.state_dir, '--keep-alive', '60',
            'placement_wsgi:application']
    if not os.path.exists(command[0]):
        raise SystemExit('%s is not installed in this virtualenv (pip '
                         'install %s)' % (command[0],
                                          args.placement_server))
    log = open(os.path.join(args.state_dir, 'placement-server.log'), 'w')
    server = subprocess.Popen(command, stdout=log, stderr=log)
    deadline = time.monotonic() + 120
    while True:
        # Answered by Placement, not only accepted by the server.
        connection = http.client.HTTPConnection('127.0.0.1', port,
                                                timeout=5)
        try:
            connection.request('GET', '/')
            if connection.getresponse().status == 200:
                break
        except OSError:
            pass
        finally:
            connection.close()
        if server.poll() is not None or time.monotonic() > deadline:
            with open(log.name) as f:
                sys.stderr.write(f.read()[-3000:])
            raise SystemExit('%s did not start Placement'
                             % args.placement_server)
        time.sleep(0.2)

    def stats():
        time.sleep(3 * COUNTS_FLUSH_S)  # the workers' last counts written
        counts = collections.Counter()
        for name in os.listdir(args.state_dir):
            if name.startswith('counts-') and name.endswith('.json'):
                with open(os.path.join(args.state_dir, name)) as f:
                    counts.update(json.load(f))
        kinds = {kind: count for kind, count in counts.items()
                 if not kind.startswith(CPU)}
        return {'requests': sum(kinds.values()), 'kinds': kinds,
                'cpu_s': {kind[len(CPU):]: seconds
                          for kind, seconds in counts.items()
                          if kind.startswith(CPU)}}

    say({'endpoint': 'http://127.0.0.1:%d' % port})
    answer_on_stdin(stats)
    server.terminate()
    server.wait(30)


def serve_placement_workers(args):
    """Placement as deployed: its schema migrated once here, then
    ``--placement-workers`` processes serving one port."""
    aio_placement.build_app(args.state_dir, args.placement_db_url)
    port = benchlib.free_port()
    if args.placement_server != 'threads':
        return serve_placement_server(args, port)
    context = multiprocessing.get_context('spawn')
    workers = []
    for _ in range(args.placement_workers):
        ours, theirs = context.Pipe()
        process = context.Process(target=placement_worker,
                                  args=(args, port, theirs), daemon=True)
        process.start()
        workers.append((process, ours))
    for _process, pipe in workers:
        pipe.recv()

    def stats():
        counts = collections.Counter()
        for _process, pipe in workers:
            pipe.send('stats')
            counts.update(pipe.recv())
        return {'requests': sum(counts.values()), 'kinds': dict(counts)}

    say({'endpoint': 'http://127.0.0.1:%d' % port})
    answer_on_stdin(stats)
    for process, pipe in workers:
        pipe.send('stop')
        process.join(30)


class Child:
    """A server process of ``tools/bench/report_storm`` (its ``args``),
    asked for its numbers over a pipe."""

    def __init__(self, *args):
        self.process = subprocess.Popen(
            [sys.executable, STORM, *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ready = self._line()

    def _line(self):
        for line in self.process.stdout:
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])
        raise SystemExit('a server process exited with %s'
                         % self.process.wait())

    def stats(self):
        self.process.stdin.write('stats\n')
        self.process.stdin.flush()
        return self._line()

    def stop(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
