"""Serving for real: the cheroot server in process, ``cyborg-api`` as a
subprocess with one and two workers, and the WSGI module."""

import os
import signal
import socket
import subprocess
import sys
import time

import fixtures
import requests

from cyborg.api import app as api_app
from cyborg.api import server
from cyborg.tests import base
from cyborg.tests.functional import daemons

BIN_DIR = os.path.dirname(sys.executable)
START_TIMEOUT = 30
STOP_TIMEOUT = 10


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def listening_sockets(port):
    """How many sockets listen on ``port`` (IPv4, any address)."""
    count = 0
    with open('/proc/net/tcp') as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            local, state = fields[1], fields[3]
            if state == '0A' and int(local.split(':')[1], 16) == port:
                count += 1
    return count


def wait_for_v2(url, process):
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError('exited with %s' % process.returncode)
        try:
            return requests.get(url + '/v2', timeout=2)
        except requests.ConnectionError:
            time.sleep(0.1)
    raise AssertionError('%s did not answer in %s s' % (url, START_TIMEOUT))


class WSGIServerTest(base.TestCase):

    def test_serves_on_port_zero_and_stops(self):
        self.flags(auth_strategy='noauth')
        wsgi_server = server.WSGIServer(api_app.setup_app(self.conf),
                                        '127.0.0.1', 0, 2)
        wsgi_server.start()
        self.addCleanup(wsgi_server.stop)
        self.assertNotEqual(0, wsgi_server.port)
        url = 'http://127.0.0.1:%d' % wsgi_server.port
        response = requests.get(url + '/v2/')
        self.assertEqual(200, response.status_code)
        self.assertEqual(url + '/v2/', response.json()['links'][0]['href'])
        started = time.monotonic()
        wsgi_server.stop()
        wsgi_server.wait()
        self.assertLess(time.monotonic() - started, STOP_TIMEOUT)
        self.assertRaises(requests.ConnectionError, requests.get, url)

    def test_port_in_use(self):
        with socket.socket() as taken:
            taken.bind(('127.0.0.1', 0))
            taken.listen()
            port = taken.getsockname()[1]
            self.assertRaises(OSError, server.check_bindable, '127.0.0.1',
                              port)
            wsgi_server = server.WSGIServer(lambda e, s: [], '127.0.0.1',
                                            port, 1)
            self.assertRaises(OSError, wsgi_server.start)

    def test_default_workers(self):
        self.assertTrue(1 <= server.default_workers() <= 4)


class CyborgAPITest(base.TestCase):
    """The console script with a config file of its own."""

    def _config(self, **api):
        path = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'cyborg.conf')
        lines = ['[DEFAULT]', 'auth_strategy = noauth',
                 'transport_url = fake:/', '[api]']
        lines += ['%s = %s' % item for item in sorted(api.items())]
        with open(path, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        return path

    def _start(self, workers):
        port = free_port()
        config = self._config(host_ip='127.0.0.1', port=port,
                              api_workers=workers)
        script = os.path.join(BIN_DIR, 'cyborg-api')
        command = ([script] if os.path.exists(script)
                   else [sys.executable, '-m', 'cyborg.cmd.api'])
        log = open(os.path.join(os.path.dirname(config), 'log'), 'w+')
        self.addCleanup(log.close)
        process = subprocess.Popen(command + ['--config-file', config],
                                   stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(self._kill, process)
        return process, 'http://127.0.0.1:%d' % port, port

    @staticmethod
    def _kill(process):
        if process.poll() is None:
            process.kill()
            process.wait()

    def _stop(self, process):
        """SIGTERM: the server exits cleanly, well before its graceful
        shutdown timeout would end a server that ignored the signal."""
        process.send_signal(signal.SIGTERM)
        self.assertEqual(0, process.wait(STOP_TIMEOUT))

    def test_serves_and_stops_on_sigterm(self):
        process, url, _port = self._start(workers=1)
        response = wait_for_v2(url, process)
        self.assertEqual(200, response.status_code)
        self.assertEqual('v2.0', response.json()['id'])
        self.assertEqual('accelerator 2.0',
                         response.headers['OpenStack-API-Version'])
        # One worker serves from the process itself: no launcher parent.
        self.assertEqual([], daemons.children(process.pid))
        self._stop(process)

    def test_two_workers(self):
        process, url, port = self._start(workers=2)
        wait_for_v2(url, process)
        deadline = time.monotonic() + START_TIMEOUT
        while listening_sockets(port) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(2, listening_sockets(port))
        self.assertEqual(2, len(daemons.children(process.pid)))
        for _ in range(20):
            with requests.Session() as session:  # a new connection each
                self.assertEqual(200, session.get(url + '/v2').status_code)
        self._stop(process)
        self.assertEqual(0, listening_sockets(port))


class WSGIModuleTest(base.TestCase):

    def test_application_from_config_file(self):
        config = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'cyborg.conf')
        with open(config, 'w') as f:
            f.write('[DEFAULT]\nauth_strategy = noauth\n'
                    'transport_url = fake:/\n'
                    '[api]\npublic_endpoint = http://api.test/acc\n')
        code = ('import webob\n'
                'from cyborg.wsgi import api\n'
                'r = webob.Request.blank("/v2").get_response(api.application)'
                '\n'
                'print(r.status_int, r.json["links"][0]["href"])\n')
        env = dict(os.environ, CYBORG_CONFIG_FILE=config)
        result = subprocess.run([sys.executable, '-c', code], env=env,
                                capture_output=True, text=True,
                                timeout=START_TIMEOUT, check=True)
        self.assertEqual('200 http://api.test/acc/v2/',
                         result.stdout.strip().splitlines()[-1])
