"""Every daemon stops within 5 s of SIGTERM or SIGINT, whatever it waits
for (issue 40): the console scripts as processes, each told to stop
while it waits for something that does not come: a broker that refuses
connections, never answers or went away, an exchange no conductor has
declared, a database that refuses connections, Placement or Glance that
never answer while the conductor applies a report or binds an ARQ, a
conductor that does not answer the agent's report or the API's request.

Daemons that can wait side by side start together, to share the time
start-up takes on a loaded machine (which has a generous wait of its
own); each is timed from its signal to its exit, which must be a clean
one (status 0, "stopped" logged). The shared servers are never stopped:
an unreachable broker or database is a port nothing listens on, an
unresponsive one a socket that takes connections and never answers.
"""

import os
import signal
import socket
import threading
import time
import uuid

import requests
import sqlalchemy as sa

from cyborg.common import keys
from cyborg.common import states
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import services
from cyborg.tests.functional import daemons
from cyborg.tests.functional import faults
from cyborg.tests.functional import nova
from cyborg.tests.functional import test_daemons
from cyborg.tests.functional.test_hello import wait_for

#: The issue's bound: seconds from the signal to the end of the process.
STOP_BOUND = 5.0
#: Seconds a daemon may take to reach the state it is stopped in.
START_WAIT = 75


def silent_port(test):
    """A loopback port that takes connections (the kernel completes them)
    and never answers: a broker or a service that hangs."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    port = daemons.free_port()
    sock.bind(('127.0.0.1', port))
    sock.listen(128)
    test.addCleanup(sock.close)
    return port


def rabbit_url(port):
    """The transport URL of a broker on loopback ``port``."""
    return 'rabbit://guest:guest@127.0.0.1:%d/' % port


class _StopPromptly(test_daemons._Daemons):

    backend = 'postgresql'
    schema = 'models'

    def daemon(self, name, host, **sections):
        """Daemon ``name`` of ``host``, its configuration the test's with
        ``sections`` over it."""
        for identity in (keys.API, keys.host_identity(host)):
            keys.create(self.key_dir, identity)
        config = self.config('%s-%s.conf' % (name, host), host, **sections)
        return daemons.Daemon(
            self, name, ['--config-file', config],
            os.path.join(self.tmp, '%s-%s.log' % (name, host)))

    def wait_for_log(self, daemon, text, timeout=START_WAIT):
        """Until ``daemon`` has logged ``text`` (it is in the state)."""
        def logged():
            if not daemon.running():
                raise AssertionError('%s exited:\n%s' % (
                    daemon.name, daemon.output()[-3000:]))
            return text in daemon.output()
        wait_for(logged, timeout=timeout, interval=0.1)

    def stop(self, daemon, signum=signal.SIGTERM):
        """Signal ``daemon``; ``(exit status, seconds it took to end)``."""
        began = time.monotonic()
        status = daemon.terminate(timeout=30, signum=signum)
        return status, time.monotonic() - began

    def assertStopsPromptly(self, what, daemon, signum=signal.SIGTERM):
        status, took = self.stop(daemon, signum)
        # Shown with -s, and with a failure.
        print('%s: %s, exit status %s after %.2f s' % (
            what, signal.Signals(signum).name, status, took))
        output = daemon.output()
        self.assertTrue(
            status == 0 and took < STOP_BOUND and 'stopped' in output[-600:],
            '%s: %s after %.1f s (exit status %s), within %s s wanted; its '
            'log ends:\n%s' % (what, signal.Signals(signum).name, took,
                               status, STOP_BOUND, output[-3000:]))


class StopWhileWaitingTest(_StopPromptly, base.TestCase):
    """Daemons that wait to start (for the broker, for the exchange, for
    the database) or have lost their broker; the all-in-one and the API,
    started."""

    def test_broker_unreachable_unresponsive_lost_or_without_exchange(self):
        # A node of the test's own, killed (as a crash would) under a
        # conductor and an agent that use it.
        rabbit = faults.PrivateRabbit.started(self)
        hostname = 'cmp-%s' % uuid.uuid4().hex[:8]
        lost = [self.daemon('conductor', 'ctl-1',
                            DEFAULT={'transport_url': rabbit.url}),
                self.daemon('agent', hostname,
                            DEFAULT={'transport_url': rabbit.url})]
        refused = rabbit_url(daemons.free_port())
        silent = rabbit_url(silent_port(self))
        cases = [
            ('conductor, broker refuses', 'conductor', refused,
             'Connection failed', signal.SIGTERM),
            ('agent, broker refuses', 'agent', refused,
             'Connection failed', signal.SIGINT),
            ('conductor, broker never answers', 'conductor', silent,
             'Connection failed', signal.SIGTERM),
            ('agent, broker never answers', 'agent', silent,
             'Connection failed', signal.SIGTERM),
        ]
        started = [(what, self.daemon(name, 'h%d' % n, DEFAULT={
            'transport_url': url}), log, signum)
            for n, (what, name, url, log, signum) in enumerate(cases)]
        # A guest on the real broker, whose exchange no conductor made.
        started.append((
            'agent, waiting for its exchange',
            self.daemon('agent', 'hx', DEFAULT={
                'control_exchange': 'nobody-%s' % uuid.uuid4().hex[:8]}),
            'does not exist on the broker yet', signal.SIGTERM))
        for _what, daemon, log, _signum in started:
            self.wait_for_log(daemon, log)
        self.wait_for_log(lost[1], 'Registered with the conductor')
        rabbit.kill()
        for daemon in lost:
            self.wait_for_log(daemon, 'is unreachable', timeout=30)
        started += [('conductor, broker lost', lost[0], None, signal.SIGTERM),
                    ('agent, broker lost', lost[1], None, signal.SIGTERM)]
        for what, daemon, _log, signum in started:
            self.assertStopsPromptly(what, daemon, signum)

    def test_database_unreachable_and_started_daemons(self):
        # MariaDB's URL: oslo.db retries a refused connection to it
        # ([database] max_retries), not one to PostgreSQL (whose error
        # psycopg2 words as oslo.db does not expect).
        no_database = sa.engine.make_url(services.URLS['mysql']).set(
            port=daemons.free_port()).render_as_string(hide_password=False)
        conductor = self.daemon('conductor', 'c1',
                                database={'connection': no_database})
        api_port = daemons.free_port()
        api = self.daemon('api', 'a1', DEFAULT={'auth_strategy': 'noauth'},
                          api={'host_ip': '127.0.0.1', 'port': api_port,
                               'api_workers': 1},
                          database={'connection': no_database})
        aio_port = daemons.free_port()
        aio = daemons.Daemon(
            self, 'aio', ['--port', str(aio_port), '--state-dir',
                          os.path.join(self.tmp, 'aio')],
            os.path.join(self.tmp, 'aio.log'))
        # Both check the database before they serve.
        for daemon in (conductor, api):
            self.wait_for_log(daemon, 'SQL connection failed')
        daemons.wait_for_http('http://127.0.0.1:%d/v2' % aio_port,
                              timeout=START_WAIT, daemon=aio)
        self.assertStopsPromptly('conductor, database refuses', conductor)
        self.assertStopsPromptly('API, database refuses', api,
                                 signal.SIGINT)
        self.assertStopsPromptly('all-in-one, started', aio)


class StopMidWorkTest(_StopPromptly, base.TestCase):
    """A conductor whose Placement and Glance never answer, an agent and
    the API: the agent mid-report (the conductor holds its answer while
    it syncs Placement), the API mid-request (the conductor holds its
    answer while it binds an ARQ, waiting for Glance), then the
    conductor mid-report and mid-bind with its database gone. What they
    leave is what the next start resumes."""

    def config(self, name, host, **sections):
        hang = 'http://127.0.0.1:%d' % self.silent
        for group in ('placement', 'glance'):
            sections.setdefault(group, {'auth_type': 'admin_token',
                                        'token': 'admin', 'endpoint': hang})
        return super().config(name, host, **sections)

    def host_row(self, hostname):
        with self.db.engine.connect() as connection:
            return connection.execute(sa.select(
                models.Host.__table__).where(
                    models.Host.hostname == hostname)).first()

    def reported(self, hostname):
        """Whether a report of ``hostname`` is committed."""
        row = self.host_row(hostname)
        return row is not None and row.report_generation > 0

    def test_agent_api_and_conductor_mid_work(self):
        self.silent = silent_port(self)
        gate, through = faults.TcpGate.for_url(self, self.db.url)
        gate.open()
        conductor = self.daemon('conductor', 'ctl-1',
                                database={'connection': through})
        api_port = daemons.free_port()
        base_url = 'http://127.0.0.1:%d' % api_port
        api = self.daemon('api', 'api-1', DEFAULT={'auth_strategy': 'noauth'},
                          api={'host_ip': '127.0.0.1', 'port': api_port,
                               'api_workers': 1})
        hostname = 'cmp-%s' % uuid.uuid4().hex[:8]
        agent = self.daemon('agent', hostname)

        # The agent's report is committed; the conductor syncs Placement,
        # which never answers, and the agent waits for its answer.
        wait_for(lambda: self.reported(hostname), timeout=START_WAIT)
        self.assertIn('Registered with the conductor', agent.output())
        self.assertNotIn('Reported ', agent.output())
        self.assertStopsPromptly('agent, mid-report', agent)

        # The API waits for the conductor, which binds an ARQ whose
        # profile wants an FPGA image: it asks Glance, which never answers.
        daemons.wait_for_http(base_url + '/v2', timeout=START_WAIT,
                              daemon=api)
        arq = self.arq_bound_in_background(base_url, hostname)
        wait_for(lambda: db_arqs.get(self.ctx, arq).state ==
                 states.BIND_STARTED, timeout=30)
        self.assertStopsPromptly('API, mid-request', api, signal.SIGINT)

        gate.close()
        self.assertStopsPromptly(
            'conductor, mid-report and mid-bind, database gone', conductor)
        # Left for the next start: the conductor's unfinished bind, which
        # it fails as it starts (Binding.recover), and the host's Placement
        # sync, which its periodic retry runs.
        self.assertIn(arq, db_arqs.stale_binds(self.ctx, conductor='ctl-1'))
        row = self.host_row(hostname)
        self.assertNotEqual(row.report_generation, row.synced_generation)

    def arq_bound_in_background(self, base_url, hostname):
        """The uuid of an ARQ whose bind is sent (and not waited for)."""
        profile = 'stop-%s' % uuid.uuid4().hex[:8]
        headers = nova.USER_AND_SERVICE
        response = requests.post(
            base_url + '/v2/device_profiles', timeout=30,
            headers={'X-Auth-Token': 'admin'},
            json=[{'name': profile, 'groups': [{
                'resources:FPGA': '1',
                'accel:bitstream_id': str(uuid.uuid4())}]}])
        self.assertEqual(201, response.status_code, response.text)
        response = requests.post(base_url + nova.ARQS, timeout=30,
                                 headers=headers,
                                 json={'device_profile_name': profile})
        self.assertEqual(201, response.status_code, response.text)
        [arq] = response.json()['arqs']
        with self.db.engine.connect() as connection:
            rp_uuid = connection.execute(sa.select(
                models.Deployable.rp_uuid)).scalars().first()
        patch = {arq['uuid']: [
            {'op': 'add', 'path': path, 'value': value}
            for path, value in (('/hostname', hostname),
                                ('/device_rp_uuid', rp_uuid),
                                ('/instance_uuid', str(uuid.uuid4())))]}

        def bind():
            try:
                requests.patch(base_url + nova.ARQS, json=patch,
                               headers=headers, timeout=60)
            except requests.RequestException:
                pass  # the API is stopped while it waits
        threading.Thread(target=bind, daemon=True).start()
        return arq['uuid']
