"""The end-to-end cloud with upstream Cyborg first, then cyborg.

``UpstreamNovaCloud`` is ``cloud.NovaCloud`` with two differences:

* Placement is a standalone service (openstack-placement served in the
  test process on its own SQLite database), which Nova and both Cyborgs
  share; it records every request, with the caller's User-Agent;
* the accelerator service Nova knows (the ``cyborg`` port, behind the
  timing proxy) is first OpenStack Cyborg 17.0.0 from its own virtualenv
  (``cyborg.tests.functional.upstream``): its API (``upstream_api.py``),
  conductor and agent with its fake driver, on a MariaDB database of
  their own. ``take_over`` stops them, adopts their database into a new
  one with ``cyborg-dbsync adopt --from`` and starts cyborg-aio on the
  same port, on the adopted database and the same Placement, its fake
  driver reporting the card as upstream's did.
"""

import os
import subprocess
import sys
import tempfile
import threading
import uuid

import sqlalchemy as sa

from cyborg.aio import placement as aio_placement
from cyborg.api import server as api_server
from cyborg.tests.e2e import cloud
from cyborg.tests.functional import daemons
from cyborg.tests.functional import upstream
from cyborg.tests import services

RELEASE = '17.0.0'
UPSTREAM_API = os.path.join(os.path.dirname(__file__), 'upstream_api.py')


class _Recorder:
    """WSGI middleware recording (method, path, User-Agent) of each
    request."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()
        self.requests = []

    def __call__(self, environ, start_response):
        with self.lock:
            self.requests.append((environ['REQUEST_METHOD'],
                                  environ.get('PATH_INFO', ''),
                                  environ.get('HTTP_USER_AGENT', '')))
        return self.app(environ, start_response)

    def since(self, index):
        with self.lock:
            return list(self.requests[index:])

    def mark(self):
        with self.lock:
            return len(self.requests)


class UpstreamNovaCloud(cloud.NovaCloud):

    def __init__(self, venv, workdir):
        super().__init__(venv, workdir)
        self.adopted = False
        self.upstream_bin = upstream.venv(RELEASE)

    # -- Placement, standalone ------------------------------------------

    def start_placement(self):
        state_dir = tempfile.mkdtemp(prefix='placement-',
                                     dir=self.workdir)
        self.placement_log = _Recorder(aio_placement.build_app(state_dir))
        server = api_server.WSGIServer(self.placement_log, '127.0.0.1', 0, 16,
                                       name='e2e-placement')
        server.start()
        self.addCleanup(server.stop)
        return 'http://127.0.0.1:%d' % server.port

    def _placement_section(self):
        return {'auth_type': 'admin_token', 'token': 'admin',
                'endpoint': self.placement_url,
                'endpoint_override': self.placement_url}

    # -- databases ---------------------------------------------------------

    def _database(self, prefix):
        """A new MariaDB database, dropped at the end: its URL."""
        server = services.URLS['mysql']
        admin = sa.create_engine(server, isolation_level='AUTOCOMMIT')
        self.addCleanup(admin.dispose)
        name = '%s_%s' % (prefix, uuid.uuid4().hex[:10])
        with admin.connect() as connection:
            connection.execute(sa.text('CREATE DATABASE %s' % name))
        self.addCleanup(self._drop, admin, name)
        return sa.engine.make_url(server).set(
            drivername='mysql+pymysql', database=name).render_as_string(
                hide_password=False)

    # -- upstream Cyborg -------------------------------------------------

    def start_cyborg(self):
        if self.adopted:
            return super().start_cyborg()
        self.upstream_url = self._database('cyborg_e2e_upstream')
        self.upstream_conf = daemons.write_config(
            os.path.join(self.workdir, 'upstream-cyborg.conf'), {
                'DEFAULT': {'host': cloud.HOST, 'debug': 'true',
                            'transport_url': self.transport_url,
                            'periodic_interval': 5,
                            'state_path': os.path.join(self.workdir,
                                                       'upstream-state')},
                'database': {'connection': self.upstream_url},
                'agent': {'enabled_drivers': 'fake_driver',
                          'resource_provider_name': cloud.HOST,
                          'resource_provider_startup_retries': 3},
                'placement': self._placement_section(),
                'nova': {'auth_type': 'admin_token',
                         'token': cloud.ADMIN_TOKEN,
                         'endpoint': self.nova_url,
                         'endpoint_override': self.nova_url},
                'oslo_concurrency': {'lock_path': os.path.join(
                    self.workdir, 'upstream-locks')}})
        upstream._run([os.path.join(self.upstream_bin, 'cyborg-dbsync'),
                       '--config-file', self.upstream_conf, 'upgrade'],
                      "upstream's cyborg-dbsync upgrade")
        self._start_upstream('conductor', [
            os.path.join(self.upstream_bin, 'cyborg-conductor'),
            '--config-file', self.upstream_conf])
        api = self._start_upstream('api', [
            os.path.join(self.upstream_bin, 'python'), UPSTREAM_API,
            self.upstream_conf, str(self.ports['cyborg'])])
        daemons.wait_for_http(self.cyborg_url + '/v2', daemon=api)
        return api

    def _start_upstream(self, name, command):
        process = daemons.Daemon(
            self, 'upstream-' + name, [],
            os.path.join(self.logs, 'upstream-cyborg-%s.log' % name),
            command=command, env={'PYTHONPATH': '',
                                  'PYTHONWARNINGS': 'ignore'})
        self.processes['upstream-' + name] = process
        return process

    def _wait_for_compute(self):
        """Upstream's agent looks for the compute node provider once, at
        its start: started when nova-compute has made it."""
        cloud.wait(lambda: self.check_running() or self.provider_tree(),
                   240, 'the compute node provider')
        self._start_upstream('agent', [
            os.path.join(self.upstream_bin, 'cyborg-agent'),
            '--config-file', self.upstream_conf])
        super()._wait_for_compute()

    # -- the take-over ---------------------------------------------------

    def stop_upstream(self):
        for name in ('agent', 'api', 'conductor'):
            process = self.processes.pop('upstream-' + name)
            if process.terminate() is None:
                process.kill()

    def take_over(self):
        """Upstream's services stopped, its database adopted into ours,
        cyborg-aio started on upstream's port: the output of adopt."""
        self.stop_upstream()
        self.database_url = self._database('cyborg_e2e_adopted')
        config = daemons.write_config(
            os.path.join(self.workdir, 'dbsync.conf'),
            {'database': {'connection': self.database_url}})
        for argv in (['upgrade'], ['adopt', '--from', self.upstream_url]):
            done = subprocess.run(
                [sys.executable, '-m', 'cyborg.cmd.dbsync', '--config-file',
                 config] + argv, capture_output=True, text=True,
                timeout=300, env=dict(os.environ, PYTHONWARNINGS='ignore'))
            if done.returncode:
                raise AssertionError('cyborg-dbsync %s: %s%s' % (
                    argv[0], done.stdout, done.stderr))
        self.adopted = True
        self.start_cyborg()
        return done.stdout

    def upgrade_check(self):
        """``cyborg-status upgrade check`` on cyborg-aio's configuration
        file: its output (kept in ``logs/cyborg-status.log``)."""
        done = subprocess.run(
            [sys.executable, '-m', 'cyborg.cmd.status', '--config-file',
             os.path.join(self.workdir, 'cyborg.conf'), 'upgrade', 'check'],
            capture_output=True, text=True, timeout=300,
            env=dict(os.environ, PYTHONWARNINGS='ignore'))
        with open(os.path.join(self.logs, 'cyborg-status.log'), 'w') as f:
            f.write('exit %d\n%s%s' % (done.returncode, done.stdout,
                                       done.stderr))
        return done.stdout + done.stderr

    def aio_config(self, path):
        sections = super().aio_config(path)
        if self.adopted:
            sections.update({
                'database': {'connection': self.database_url},
                'placement': self._placement_section(),
                'fake_driver': {'report_as': 'upstream'}})
        return sections
