"""The systemd units in etc/systemd/: they verify, and the daemons start
and stop the way the units run them.

The units name the installed console scripts in /usr/bin and the
configuration in /etc/cyborg. The tests run the same command lines with
the binary taken from this Python environment and /etc/cyborg replaced by
a temporary directory laid out the same way.
"""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid

import fixtures

from cyborg.common import context
from cyborg.common import exception
from cyborg.db import hosts as db_hosts
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests import services
from cyborg.tests.functional import daemons
from cyborg.tests.functional.test_hello import wait_for

UNIT_DIR = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'etc',
                        'systemd')
DAEMONS = ('api', 'conductor', 'agent')
INSTALLED_BIN = '/usr/bin/'
CONFIG_DIR = '/etc/cyborg'


def unit_path(name):
    return os.path.abspath(os.path.join(UNIT_DIR, 'cyborg-%s.service' % name))


def parse_unit(path):
    """``{section: [(key, value), ...]}``; keys may repeat, as in systemd."""
    sections = {}
    current = None
    with open(path) as f:
        text = f.read().replace('\\\n', ' ')
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in '#;':
            continue
        if line.startswith('[') and line.endswith(']'):
            current = sections.setdefault(line[1:-1], [])
            continue
        key, _, value = line.partition('=')
        current.append((key.strip(), value.strip()))
    return sections


def values(unit, section, key):
    return [v for k, v in unit.get(section, []) if k == key]


def value(unit, section, key, default=None):
    found = values(unit, section, key)
    return found[-1] if found else default


def seconds(timespan):
    """A systemd time span such as ``75``, ``75s`` or ``1min 30s``."""
    units = {'': 1, 's': 1, 'sec': 1, 'm': 60, 'min': 60, 'h': 3600}
    total = 0
    for number, unit in re.findall(r'(\d+)\s*([a-z]*)', timespan):
        total += int(number) * units[unit]
    return total


def console_script(name):
    """The command that runs the console script ``name`` here."""
    script = os.path.join(os.path.dirname(sys.executable), name)
    if os.access(script, os.X_OK):
        return [script]
    return [sys.executable, '-m', 'cyborg.cmd.%s' % name[len('cyborg-'):]]


def command_line(unit, etc_dir):
    """The unit's ExecStart, runnable here with ``etc_dir`` as /etc/cyborg."""
    (exec_start,) = values(unit, 'Service', 'ExecStart')
    argv = shlex.split(exec_start)
    binary = argv[0].lstrip('-@+!:')
    if not binary.startswith(INSTALLED_BIN):
        raise AssertionError('ExecStart does not run %s...: %s'
                             % (INSTALLED_BIN, exec_start))
    args = [etc_dir + arg[len(CONFIG_DIR):]
            if arg == CONFIG_DIR or arg.startswith(CONFIG_DIR + '/')
            else arg for arg in argv[1:]]
    return console_script(os.path.basename(binary)) + args


def stop_waves(units):
    """Names of ``units`` in the order systemd stops them, in waves.

    systemd stops units in the reverse of their start order: a unit that
    is After= another of the set stops first.
    """
    after = {name: {'cyborg-%s.service' % n for n in units} & set(
        ' '.join(values(unit, 'Unit', 'After')).split())
        for name, unit in units.items()}
    left = set(units)
    waves = []
    while left:
        # Stop now whatever no remaining unit is ordered after.
        wave = sorted(n for n in left if not any(
            'cyborg-%s.service' % n in after[m] for m in left))
        if not wave:
            raise AssertionError('ordering cycle among %s' % sorted(left))
        waves.append(wave)
        left -= set(wave)
    return waves


class UnitFilesTest(base.TestCase):

    def test_systemd_analyze_verify(self):
        analyze = shutil.which('systemd-analyze')
        if analyze is None:
            self.skipTest('systemd-analyze is not installed')
        # verify fails on an ExecStart binary that does not exist, so it
        # checks copies that run the console scripts of this environment.
        # It does not look up User= (the user cyborg need not exist here).
        tmp = self.useFixture(fixtures.TempDir()).path
        copies = []
        for name in DAEMONS:
            with open(unit_path(name)) as f:
                text = f.read()
            command = console_script('cyborg-%s' % name)
            if len(command) != 1:
                self.skipTest('console script cyborg-%s is not installed '
                              'next to %s' % (name, sys.executable))
            text = text.replace(INSTALLED_BIN + 'cyborg-%s' % name,
                                command[0])
            copy = os.path.join(tmp, os.path.basename(unit_path(name)))
            with open(copy, 'w') as f:
                f.write(text)
            copies.append(copy)
        result = subprocess.run([analyze, 'verify', '--man=no'] + copies,
                                capture_output=True, text=True, timeout=60)
        output = result.stdout + result.stderr
        self.assertEqual(0, result.returncode, output)
        # Unknown settings and bad values are only warnings ("ignoring")
        # with exit status 0: any message about our units is a failure.
        for copy in copies:
            self.assertNotIn(os.path.basename(copy), output)

    def test_units_run_the_daemons_as_intended(self):
        for name in DAEMONS:
            unit = parse_unit(unit_path(name))
            service = dict(unit['Service'])
            self.assertEqual(
                '/usr/bin/cyborg-%s --config-file /etc/cyborg/cyborg.conf'
                % name, service['ExecStart'])
            self.assertEqual('simple', service['Type'])
            self.assertEqual('cyborg', service['User'])
            self.assertEqual('cyborg', service['Group'])
            self.assertEqual('on-failure', service['Restart'])
            self.assertEqual('SIGTERM', service['KillSignal'])
            self.assertIn('network-online.target',
                          value(unit, 'Unit', 'Wants'))
            after = ' '.join(values(unit, 'Unit', 'After')).split()
            self.assertIn('network-online.target', after)
            self.assertIn('rabbitmq-server.service', after)
            # Broker and database may be remote: ordering, never a need.
            self.assertNotIn('rabbitmq-server.service',
                             ' '.join(values(unit, 'Unit', 'Requires')))
            self.assertEqual('cyborg', service['StateDirectory'])
            self.assertEqual('cyborg', service['LogsDirectory'])
            self.assertEqual('true', service['PrivateTmp'])
            self.assertEqual('true', service['ProtectHome'])
            if name == 'agent':
                # sudo privsep-helper, /sys and /dev: see the unit.
                self.assertNotIn('NoNewPrivileges', service)
                self.assertNotIn('PrivateDevices', service)
                self.assertNotIn('ProtectKernelTunables', service)
                self.assertEqual('full', service['ProtectSystem'])
            else:
                self.assertEqual('true', service['NoNewPrivileges'])
                self.assertEqual('strict', service['ProtectSystem'])
                self.assertIn('mariadb.service', after)
                self.assertIn('postgresql.service', after)
            self.assertEqual(['/var/lib/cyborg', '/var/log/cyborg'],
                             service['ReadWritePaths'].split())

    def test_conductor_stops_last(self):
        units = {name: parse_unit(unit_path(name)) for name in DAEMONS}
        self.assertEqual([['agent', 'api'], ['conductor']],
                         stop_waves(units))


class UnitsStartTheDaemonsTest(base.TestCase):
    """The three ExecStart command lines against RabbitMQ and MariaDB."""

    def setUp(self):
        super().setUp()
        self.transport_url = services.require(self, 'rabbit')
        services.require(self, 'mysql')
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.db = self.useFixture(cyborg_fixtures.Database(
            self, 'mysql', schema='migrations'))
        self.ctx = context.get_admin_context()
        self.etc = os.path.join(self.tmp, 'etc', 'cyborg')
        os.makedirs(self.etc)
        self.host = 'systemd-%s' % uuid.uuid4().hex[:8]
        self.port = daemons.free_port()
        daemons.write_config(os.path.join(self.etc, 'cyborg.conf'), {
            'DEFAULT': {'host': self.host,
                        'transport_url': self.transport_url,
                        'rpc_topic_prefix': 'test-%s-' % self.host,
                        'auth_strategy': 'noauth'},
            'database': {'connection': self.db.url},
            'api': {'host_ip': '127.0.0.1', 'port': self.port,
                    'api_workers': 2},
            'agent': {'heartbeat_interval': 1},
            'security': {'key_dir': os.path.join(self.etc, 'keys')},
        })
        # The keys, made by the command an operator runs.
        subprocess.run([sys.executable, '-m', 'cyborg.cmd.status', 'keys',
                        'create', '--api', '--host', self.host,
                        '--config-file', os.path.join(self.etc,
                                                      'cyborg.conf')],
                       check=True, capture_output=True)

    def start(self, name):
        unit = parse_unit(unit_path(name))
        argv = command_line(unit, self.etc)
        log_path = os.path.join(self.tmp, '%s.log' % name)
        log = open(log_path, 'w')
        self.addCleanup(log.close)
        process = subprocess.Popen(argv, stdout=log,
                                   stderr=subprocess.STDOUT,
                                   start_new_session=True)
        self.addCleanup(self._kill, process)
        return unit, process, log_path

    @staticmethod
    def _kill(process):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(10)

    @staticmethod
    def _group_alive(pgid):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True

    def registered(self):
        try:
            return db_hosts.get_by_hostname(self.ctx, self.host)[0]
        except exception.HostNotFound:
            return None

    def test_daemons_start_answer_and_stop_on_sigterm(self):
        started = {name: self.start(name) for name in DAEMONS}

        def alive(name):
            process, log_path = started[name][1:]
            if process.poll() is not None:
                with open(log_path) as f:
                    raise AssertionError('cyborg-%s exited with %s:\n%s' % (
                        name, process.returncode, f.read()[-3000:]))
            return True

        response = None
        deadline = time.monotonic() + 60
        while response is None and time.monotonic() < deadline:
            alive('api')
            try:
                response = daemons.wait_for_http(
                    'http://127.0.0.1:%d/v2' % self.port, timeout=1)
            except AssertionError:
                pass
        self.assertIsNotNone(response, 'cyborg-api did not answer')
        self.assertEqual(200, response.status_code)
        self.assertEqual('v2.0', response.json()['id'])

        wait_for(lambda: alive('agent') and alive('conductor')
                 and self.registered(), timeout=60)
        self.assertEqual('up', self.registered().status)

        # "systemctl stop cyborg-*": units ordered After= another stop
        # before it, the rest together. Each gets KillSignal, to the main
        # process or, with KillMode=control-group (the default), to every
        # process of the unit; after TimeoutStopSec systemd would SIGKILL.
        for wave in stop_waves({name: unit for name, (unit, _p, _l)
                                in started.items()}):
            self.stop_together({name: started[name] for name in wave})

    def stop_together(self, started):
        sent = time.monotonic()
        for unit, process, _log in started.values():
            signum = getattr(signal, value(unit, 'Service', 'KillSignal'))
            if value(unit, 'Service', 'KillMode',
                     'control-group') == 'control-group':
                os.killpg(process.pid, signum)
            else:
                process.send_signal(signum)
        for name, (unit, process, log_path) in started.items():
            limit = seconds(value(unit, 'Service', 'TimeoutStopSec'))
            remaining = max(0, sent + limit - time.monotonic())
            try:
                code = process.wait(remaining)
            except subprocess.TimeoutExpired:
                self.fail('cyborg-%s did not stop within TimeoutStopSec=%s'
                          % (name, limit))
            with open(log_path) as f:
                output = f.read()
            # systemd counts exit 0 and death by SIGTERM as a clean stop.
            self.assertIn(code, (0, -signal.SIGTERM),
                          'cyborg-%s:\n%s' % (name, output[-3000:]))
            # Nothing of the unit may outlive its main process (API
            # workers, for one): under KillMode=mixed systemd would
            # SIGKILL it.
            wait_for(lambda pid=process.pid: not self._group_alive(pid),
                     timeout=10)
