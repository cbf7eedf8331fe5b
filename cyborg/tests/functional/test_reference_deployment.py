"""The reference deployment (doc/source/admin/reference-deployment.rst),
started from Debian's and PyPI's packages with private data directories
and ports, and broken one node at a time while Nova binds and agents
report.

Started: three Galera nodes, HAProxy in front of them (one writer, two
backups) and of two API instances (``cyborg.wsgi.api:application`` under
uWSGI, two processes each), two ``cyborg-conductor`` processes (both
conductors and both APIs reach the database through HAProxy), the real
Placement, a stand-in Nova, the broker (a three-node RabbitMQ cluster,
quorum queues: ``deployment.ClusterRabbit``), and simulated compute
hosts (``cyborg.sim``)
whose boot storm and trickle of changes go on throughout. Nova's calls
(``deployment.BindStorm``: ARQs created and bound as Nova does, polled
until resolved) go to HAProxy.

The faults, in turn, each while the binds go on: one API instance
killed; the Galera node HAProxy writes to killed; one conductor killed;
the RabbitMQ node leading the conductors' queue killed, then started
again. After each, the numbers are
printed (binds ended and how, reports converged, time to recover) and
checked as counts: every bind ended Bound or BindFailed, none stuck, no
attach handle given twice, no 500, no error but the requests in flight
on a killed API instance, every live host up and its report in the
database.
"""

import collections
import os
import shutil
import subprocess
import threading
import time

import fixtures
import sqlalchemy as sa

from cyborg.common import broker as broker_commands
from cyborg.common import keys
from cyborg.common import rpc
from cyborg.sim import hosts as simhosts
from cyborg.tests import base
from cyborg.tests import services
from cyborg.tests.functional import daemons
from cyborg.tests.functional import deployment
from cyborg.tests.functional import nova
from cyborg.tests.functional import test_simulated_hosts

HOSTS = 10
PROFILE = 'refdeploy-fpga'
GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}
CONDUCTORS = ('ctl-1', 'ctl-2')
#: How long a wait for what must happen may take on a loaded machine.
SETTLE = 120
#: The conductors' timings: a host silent for 30 s is down (far more
#: than a broker restart takes); the lease of the shared checks lasts
#: 3 s, so the survivor takes it within 4/3 * 3 + 1 = 5 s.
CONDUCTOR = {'host_down_timeout': 30, 'heartbeat_flush_interval': 1,
             'periodic_lease_timeout': 3, 'liveness_check_interval': 1}
LEASE_BOUND = 4 / 3 * 3 + 1
#: How long each storm runs before and after a fault.
STORM_S = 4


class ReferenceDeploymentTest(base.TestCase):

    #: The broker (see deployment's module doc): the three-node cluster.
    BROKER = deployment.ClusterRabbit

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(600, gentle=True))
        self.tmp = self.useFixture(fixtures.TempDir()).path
        keep = os.environ.get('CYBORG_TEST_KEEP_LOGS')
        if keep:
            # Runs after every process is stopped, before the directory
            # goes: the logs of each daemon, HAProxy and uWSGI.
            self.addCleanup(self._keep_logs, keep)
        self.snippets = deployment.snippets()
        self.key_dir = os.path.join(self.tmp, 'keys')
        os.makedirs(self.key_dir)
        keys.create(self.key_dir, keys.API)
        for name in CONDUCTORS:
            keys.create(self.key_dir, keys.host_identity(name))
        self.results = []

        # What takes long first, each in its own time: the broker in a
        # thread, Placement and Nova as processes of their own, Galera.
        broker = {}
        starting = threading.Thread(target=self._start_broker,
                                    args=(broker,))
        starting.start()
        self.placement = self.useFixture(
            test_simulated_hosts.SeparatePlacement(self, self.conf))
        self.nova = nova.StandInNova().start(self)
        try:
            self.galera = deployment.Galera(self)
        finally:
            starting.join()
        if 'error' in broker:
            raise broker['error']
        self.broker = broker['broker']
        # The page's policy, which is what cyborg-status keys broker
        # prints.
        self.assertEqual(list(broker_commands.policy()),
                         self.snippets['policy'][-3:])
        self.broker.apply_policy(self.snippets['policy'])
        # The page's clients list the cluster's nodes.
        page_url = self.snippets['conf']['DEFAULT']['transport_url']
        if self.broker.nodes > 1:
            self.assertEqual(self.broker.nodes, page_url.count('@'))

        # HAProxy with the page's sections, given this machine's ports.
        self.api_ports = [daemons.free_port() for _ in range(2)]
        self.vip_api = daemons.free_port()
        self.vip_db = daemons.free_port()
        addresses = {'%s:%d' % (deployment.VIP, deployment.API_PORT):
                     ('127.0.0.1', self.vip_api),
                     '%s:%d' % (deployment.VIP, deployment.DB_PORT):
                     ('127.0.0.1', self.vip_db)}
        addresses.update(
            ('%s:%d' % (ip, deployment.API_PORT), ('127.0.0.1', port))
            for ip, port in zip(deployment.CONTROLLERS[:2], self.api_ports,
                                strict=True))
        addresses.update(self.galera.addresses())
        self.haproxy = deployment.HAProxy(
            self, self.tmp, deployment.localize(self.snippets['haproxy'],
                                                addresses))
        self.base = 'http://127.0.0.1:%d' % self.vip_api
        self.db_url = 'mysql+pymysql://root@127.0.0.1:%d/%s' % (
            self.vip_db, self.galera.name)
        self.engine = sa.create_engine(self.db_url,
                                       poolclass=sa.pool.NullPool)
        self.addCleanup(self.engine.dispose)

        # The conductors, then the API instances under uWSGI.
        self.conductors = {name: self._conductor(name)
                           for name in CONDUCTORS}
        self.apis = []
        for index, port in enumerate(self.api_ports):
            name = 'ctl-%d' % (index + 1)
            config = self._config('api-%s.conf' % name, name)
            ini = deployment.api_ini(self.snippets['uwsgi'], port, config)
            self.apis.append(deployment.UwsgiAPI(
                self, self.tmp, name, ini, port, config).start())
        for api in self.apis:
            api.wait_ready(SETTLE)
        deployment.wait_until(
            lambda: len(self.haproxy.up('cyborg_api')) == 2, SETTLE,
            what='HAProxy takes both API instances as up')
        deployment.wait_until(
            lambda: all('Started ConductorManager' in c.output()
                        for c in self.conductors.values()), SETTLE,
            what='both conductors listen')

    def _keep_logs(self, where):
        """Copy the logs and configuration files (not the simulated
        hosts' sysfs trees, full of links) to ``where``."""
        target = os.path.join(where, os.path.basename(self.tmp))
        os.makedirs(target, exist_ok=True)
        for name in os.listdir(self.tmp):
            path = os.path.join(self.tmp, name)
            if os.path.isfile(path) and not os.path.islink(path) and (
                    '.log' in name or name.endswith(('.cfg', '.ini',
                                                     '.conf'))):
                shutil.copy2(path, target)
        print('logs kept in %s' % target)

    # -- the deployment's parts --------------------------------------------

    def _start_broker(self, out):
        try:
            out['broker'] = self.BROKER(self)
        except BaseException as e:  # noqa: BLE001 - raised in setUp
            out['error'] = e

    def _config(self, filename, host):
        """cyborg.conf of a daemon on ``host``: the page's options (the
        database through HAProxy, the broker's nodes, quorum queues) and
        what a test machine has instead of Keystone; its path."""
        page = self.snippets['conf']
        values = {
            'DEFAULT': {'host': host,
                        'transport_url': self.broker.transport_url(),
                        'auth_strategy': 'noauth', 'state_path': self.tmp},
            'database': {'connection': self.db_url},
            'oslo_messaging_rabbit': dict(page['oslo_messaging_rabbit']),
            'conductor': dict(CONDUCTOR),
            'placement': {'auth_type': 'admin_token', 'token': 'admin',
                          'endpoint': self.placement.endpoint},
            'nova': self.nova.config(),
            'security': {'key_dir': self.key_dir},
        }
        if filename.startswith('api-'):
            # A call lost with the conductor killed under it is answered
            # 503 after this; 60 s by default, which would be most of
            # the test's time.
            values['DEFAULT']['rpc_response_timeout'] = 20
        return daemons.write_config(os.path.join(self.tmp, filename), values)

    def _conductor(self, name):
        config = self._config('conductor-%s.conf' % name, name)
        return daemons.Daemon(self, 'conductor', ['--config-file', config],
                              os.path.join(self.tmp, 'conductor-%s.log'
                                           % name))

    def _sim_hosts(self):
        """The simulated compute hosts, in this process, on the broker
        with the page's options."""
        rpc.register_opts(self.conf)
        from oslo_messaging._drivers import impl_rabbit
        self.conf.register_opts(impl_rabbit.rabbit_opts,
                                group='oslo_messaging_rabbit')
        for key, value in self.snippets['conf'][
                'oslo_messaging_rabbit'].items():
            self.flags(group='oslo_messaging_rabbit', **{key: value})
        self.flags(transport_url=self.broker.transport_url())
        self.flags(key_dir=self.key_dir, group='security')
        # Plays compute hosts: a guest on the broker, as agents are.
        rpc.init(self.conf, keys.KeyStore(self.key_dir), identity=keys.API)
        self.addCleanup(rpc.cleanup)
        tag = os.path.basename(self.tmp)[-6:]
        self.hostnames = ['ref-%s-%02d' % (tag, i) for i in range(HOSTS)]
        for hostname in self.hostnames:
            self.placement.create_compute_node(hostname)
        sim = simhosts.SimHosts(self.conf, self.hostnames, self.key_dir,
                                state_dir=self.tmp, heartbeat_interval=2,
                                rescan_interval=3, change_interval=1.0,
                                threads=4, steady_threads=2 * HOSTS + 1)
        self.addCleanup(sim.stop)
        return sim

    # -- what the database shows -------------------------------------------

    def query(self, sql, **params):
        with self.engine.connect() as connection:
            return connection.execute(sa.text(sql), params).all()

    def database_shows(self):
        shown = collections.defaultdict(list)
        for name, hostname in self.query(
                'SELECT d.name, v.hostname FROM deployables d '
                'JOIN devices v ON v.id = d.device_id'):
            shown[hostname].append(name)
        return {host: sorted(names) for host, names in shown.items()}

    def converged(self, sim):
        """The database holds every live host's current hardware."""
        try:
            wanted = {host: names for host, names in
                      sim.deployables().items() if names}
            return not sim.out_of_sync() and self.database_shows() == wanted
        except sa.exc.DBAPIError:
            return False

    def statuses(self):
        return dict(self.query(
            'SELECT hostname, status FROM hosts WHERE hostname LIKE :p',
            p='ref-%'))

    def providers(self):
        """{device rp uuid: hostname} of the fake driver's cards (their
        hardware never changes: the trickle adds and removes other
        cards)."""
        rows = self.query(
            'SELECT d.rp_uuid, v.hostname FROM deployables d '
            'JOIN devices v ON v.id = d.device_id '
            "WHERE d.name LIKE '%\\_FakeDevice' AND d.rp_uuid IS NOT NULL")
        return dict(rows)

    def lease_holder(self):
        try:
            rows = self.query('SELECT holder FROM conductor_leases')
        except sa.exc.DBAPIError:
            return None
        return rows[0][0] if rows else None

    # -- each fault --------------------------------------------------------

    def storm_phase(self, name, fault, recovered):
        """Binds go on for STORM_S seconds, ``fault()`` breaks something
        (its value: details to print), binds go on until ``recovered()``
        and STORM_S more; then the binds stop and are checked. A dict of
        the numbers."""
        sim_errors = self.sim.counts['errors']
        self.storm.start()
        time.sleep(STORM_S)
        started = time.monotonic()
        detail = fault()
        deployment.wait_until(recovered, SETTLE, 0.1,
                              what='recovery from %s' % name)
        recover_s = time.monotonic() - started
        time.sleep(STORM_S)
        self.storm.stop()
        calls, ends, instances = self.storm.take()
        result = {'fault': name, 'recover_s': round(recover_s, 1),
                  'binds': dict(ends), 'calls': len(calls),
                  'errors': [c for c in calls
                             if c.error or c.status >= 500],
                  'at': started, 'detail': detail,
                  'sim_errors': self.sim.counts['errors'] - sim_errors}
        result.update(self.check_binds(instances))
        self.results.append(result)
        print('\n%-24s recovered in %5.1f s; servers %s; calls %d; '
              'errors %d %s; %s' % (
                  name, recover_s, dict(ends), len(calls),
                  len(result['errors']),
                  sorted(collections.Counter(
                      (c.method, c.status or c.error)
                      for c in result['errors']).items()),
                  detail or ''))
        return result

    def check_binds(self, instances):
        """Every ARQ of ``instances`` ended (Bound or BindFailed, or never
        bound: its bind was refused or never arrived), no attach handle
        is given twice; then the servers are deleted as Nova does, to
        free the handles."""
        if not instances:
            return {'arq_states': {}, 'bound_twice': 0,
                    'in_use_not_bound': 0, 'in_use_after_delete': 0}
        sql = ('SELECT state, attach_handle_id FROM '
               'extended_accelerator_requests WHERE instance_uuid IN (%s)'
               % ','.join("'%s'" % i for i in instances))

        def ended():
            rows = self.query(sql)
            if any(state == 'BindStarted' for state, _ in rows):
                return None
            return rows or [('no ARQ', None)]
        rows = deployment.wait_until(ended, SETTLE,
                                     what='no ARQ left BindStarted')
        by_state = collections.Counter(state for state, _ in rows)
        handles = [h for state, h in rows if state == 'Bound']
        twice = len(handles) - len(set(handles))

        def in_use():
            return self.query('SELECT COUNT(*) FROM attach_handles '
                              'WHERE in_use = 1')[0][0]
        # Each handle in use is a bound ARQ's: none taken and lost.
        in_use_bound = in_use() - len(handles)
        for instance in instances:
            # Deleted again after a 503 (a call lost with a conductor or
            # a broker connection): the test's cleanup, not a check.
            for _attempt in range(3):
                response = self.storm.call(
                    'DELETE', '%s?instance=%s' % (nova.ARQS, instance))
                if response.status_code != 503:
                    break
            self.assertEqual(204, response.status_code, response.text)
        try:
            deployment.wait_until(lambda: in_use() == 0, 30)
        except AssertionError:
            pass
        in_use = in_use()
        return {'arq_states': dict(by_state), 'bound_twice': twice,
                'in_use_not_bound': in_use_bound,
                'in_use_after_delete': in_use}

    def lost_on(self, server):
        """Requests HAProxy sent to ``server`` that got no answer from it
        (its ``eresp``: the server closed or reset the connection)."""
        return int(self.haproxy.stats()[('cyborg_api', server)]['eresp']
                   or 0)

    def kill_api(self):
        victim = self.apis[0]
        processes = len(victim.processes()) - 1
        self.lost_before = self.lost_on(victim.name)
        self.kill_window = [time.monotonic()]
        victim.kill()
        self.kill_window.append(time.monotonic())
        self.api_processes = processes
        return 'api %s: %d worker processes' % (victim.name, processes)

    def api_recovered(self):
        # Taken out by HAProxy, then started again and taken back in.
        up = self.haproxy.up('cyborg_api')
        victim = self.apis[0]
        if victim.name not in up and not victim.daemon.running():
            victim.start()
        return victim.daemon.running() and len(up) == 2

    def kill_writer(self):
        server = self.haproxy.writer()
        self.killed_db = server
        node = self.galera.node(server)
        node.process.kill()
        node.process.wait(30)
        return 'galera %s (HAProxy writer)' % server

    def writer_recovered(self):
        writer = self.haproxy.writer()
        return writer not in (None, self.killed_db) and self.bound_since()

    def bound_since(self, moment=None):
        """Nova's bind request (a PATCH) was taken since ``moment`` (the
        fault by default)."""
        moment = self.results_fault_at if moment is None else moment
        return any(c.method == 'PATCH' and c.status == 202
                   and c.start > moment for c in list(self.storm.calls))

    def kill_conductor(self):
        holder = self.lease_holder() or ''
        name = next((n for n in CONDUCTORS if holder.startswith(n)),
                    CONDUCTORS[0])
        self.killed_conductor = name
        self.conductors[name].kill()
        self.killed_conductor_at = time.monotonic()
        self.holder_before = holder
        return ('conductor %s (lease holder %s; documented takeover '
                'within %.0f s)' % (name, holder or 'none', LEASE_BOUND))

    def lease_taken_over(self):
        holder = self.lease_holder() or ''
        survivor = [n for n in CONDUCTORS if n != self.killed_conductor][0]
        return holder.startswith(survivor)

    def kill_broker(self):
        self.broker_restarted_at = None
        self.broker_killed = self.broker.kill_one()
        return '%s: node %d killed' % (self.broker.name,
                                       self.broker_killed)

    def broker_served(self):
        """Binds went through with the node down; one node alone
        (SingleRabbit) is started again first."""
        if self.broker.nodes == 1 and self.broker_restarted_at is None:
            time.sleep(2)
            self.restart_broker()
        return self.bound_since(self.broker_restarted_at)

    def restart_broker(self):
        self.broker.restart(self.broker_killed)
        self.broker_restarted_at = time.monotonic()
        return '%s: node %d started again' % (self.broker.name,
                                              self.broker_killed)

    def test_reference_deployment_survives_each_node_lost(self):
        self.sim = sim = self._sim_hosts()
        boot_s = sim.boot()
        deployment.wait_until(lambda: self.converged(sim), SETTLE, 0.5,
                              what='the boot storm converged')
        providers = deployment.wait_until(self.providers, SETTLE,
                                          what='the fake cards reported')
        response = nova._call(self.base, 'POST', '/v2/device_profiles',
                              {'X-Auth-Token': 'admin'},
                              [{'name': PROFILE, 'groups': [GROUP]}])
        self.assertEqual(201, response.status_code, response.text)
        self.storm = deployment.BindStorm(self.base, PROFILE,
                                          sorted(providers), providers)
        print('\nreference deployment: %d hosts booted in %.1f s, '
              '%d fake cards, broker: %s'
              % (HOSTS, boot_s, len(providers), self.broker.name))
        if self.broker.nodes > 1:
            # Every queue cyborg declared is a quorum queue, the
            # heartbeat channel's and the reply and fanout queues too.
            types = self.broker.queue_types()
            print('queues by type: %s' % dict(types))
            self.assertEqual({'quorum'}, set(types), types)

        self.results_fault_at = time.monotonic()

        def fault(kill):
            def inject():
                self.results_fault_at = time.monotonic()
                return kill()
            return inject

        phases = [
            ('baseline', fault(lambda: None), lambda: True),
            ('api instance killed', fault(self.kill_api),
             self.api_recovered),
            ('galera writer killed', fault(self.kill_writer),
             self.writer_recovered),
            ('conductor killed', fault(self.kill_conductor),
             self.lease_taken_over),
            ('rabbitmq node killed', fault(self.kill_broker),
             self.broker_served),
        ]
        if self.broker.nodes > 1:
            phases.append(('rabbitmq node restarted',
                           fault(self.restart_broker),
                           lambda: self.bound_since(
                               self.broker_restarted_at)))
        for name, inject, recovered in phases:
            result = self.storm_phase(name, inject, recovered)
            converged_at = time.monotonic()
            deployment.wait_until(lambda: self.converged(sim), SETTLE, 0.5,
                                  what='reports converged after %s' % name)
            result['converge_s'] = round(time.monotonic() - converged_at, 1)
            print('%-24s reports converged %.1f s after the storm; ARQs %s; '
                  'bound twice %d; agent errors %d; hosts %s' % (
                      '', result['converge_s'], result['arq_states'],
                      result['bound_twice'], result['sim_errors'],
                      dict(collections.Counter(
                          self.statuses().values()))))
            self.check_phase(result)

    def check_phase(self, result):
        name = result['fault']
        # Every server's binds ended Bound or BindFailed.
        self.assertLessEqual(set(result['binds']), {'Bound', 'BindFailed'}
                             | self.allowed_ends(result), result)
        self.assertGreater(result['binds'].get('Bound', 0), 0, result)
        self.assertLessEqual(set(result['arq_states']),
                             {'Bound', 'BindFailed', 'Initial'}, result)
        self.assertEqual(0, result['bound_twice'], result)
        self.assertEqual(0, result['in_use_not_bound'], result)
        self.assertEqual(0, result['in_use_after_delete'], result)
        # No 500, ever.
        self.assertEqual([], [c for c in result['errors']
                              if c.status == 500], result)
        if name == 'api instance killed':
            # The only errors: requests in flight on the instance killed,
            # each a 502, each sent before the instance was gone; no more
            # than HAProxy counts as sent there and not answered (its
            # eresp, which also counts a request it could still send
            # again elsewhere: "+1" retries in its log).
            lost = self.lost_on(self.apis[0].name) - self.lost_before
            start, end = self.kill_window
            print('%-24s in flight on the instance killed: %d (HAProxy); '
                  'errors: %d' % ('', lost, len(result['errors'])))
            self.assertLessEqual(len(result['errors']), lost, result)
            self.assertEqual({502}, {c.status for c in result['errors']}
                             or {502}, result)
            self.assertEqual([], [c for c in result['errors']
                                  if c.start > end or c.end < start],
                             result)
        elif name == 'conductor killed':
            # The only errors: Nova's calls the conductor killed had
            # taken (RPC calls are acknowledged when taken), answered 503
            # when the API's wait for the reply ran out; at most one per
            # Nova worker.
            in_flight = [c for c in result['errors'] if c.status == 503
                         and c.start <= self.killed_conductor_at <= c.end]
            self.assertEqual(in_flight, result['errors'], result)
            self.assertLessEqual(len(in_flight), self.storm.workers)
        elif name == 'baseline':
            self.assertEqual([], result['errors'], result)
        # The agents' calls failed only while the one broker node was
        # down (a cluster keeps serving them).
        if name != 'rabbitmq node killed' or self.broker.nodes > 1:
            self.assertEqual(0, result['sim_errors'], result)
        # Every live host is up.
        self.assertEqual({'up'}, set(self.statuses().values()), result)
        for conductor in self.conductors.values():
            if conductor is not self.conductors.get(
                    getattr(self, 'killed_conductor', None)):
                self.assertTrue(conductor.running(),
                                conductor.output()[-3000:])

    def allowed_ends(self, result):
        """How a server may end other than Bound or BindFailed under the
        phase's fault: a 502 for a request in flight on the API
        instance killed; a 503 (with Retry-After) when the database
        connection was lost under a request, or the conductor that had
        taken its call was killed."""
        return {'%s %d' % (step, c.status) for c in result['errors']
                for step in ('create', 'bind') if c.status in (502, 503)}


class PageSnippetsTest(base.TestCase):
    """The page's snippets, without starting anything: found, complete
    and accepted by HAProxy."""

    def test_the_page_gives_every_snippet_and_haproxy_accepts_its_own(self):
        snippets = deployment.snippets()
        self.assertEqual(list(broker_commands.policy()),
                         snippets['policy'][-3:])
        self.assertEqual({'rabbit_quorum_queue': 'true',
                          'rabbit_transient_quorum_queue': 'true'},
                         {k: v for k, v in snippets['conf'][
                             'oslo_messaging_rabbit'].items()
                          if 'quorum' in k})
        self.assertIn('lazy-apps = true', snippets['uwsgi'])
        self.assertIn('module = cyborg.wsgi.api:application',
                      snippets['uwsgi'])
        # Each of the page's addresses has a local stand-in, or localize
        # fails naming it.
        addresses = {}
        for ip in (deployment.VIP,) + deployment.CONTROLLERS:
            for port in (deployment.API_PORT, deployment.DB_PORT):
                addresses['%s:%d' % (ip, port)] = ('127.0.0.1',
                                                   daemons.free_port())
        text = deployment.localize(snippets['haproxy'], addresses)
        error = self.assertRaises(AssertionError, deployment.localize,
                                  snippets['haproxy'], {})
        self.assertIn('192.0.2.10:6666', str(error))
        # The API's section alone, as the peer suite takes it
        # (tools/peer/ha.py): its check and its two servers, nothing of
        # the database's.
        api = deployment.listen_section(snippets['haproxy'], 'cyborg_api')
        self.assertIn('option httpchk GET /healthcheck', api)
        self.assertEqual(2, api.count(' check\n'))
        self.assertNotIn('mariadb', api)
        self.assertIn(api, snippets['haproxy'])
        self.assertRaises(AssertionError, deployment.listen_section,
                          snippets['haproxy'], 'cyborg')
        ini = deployment.api_ini(snippets['uwsgi'], 7777, '/tmp/c.conf')
        self.assertIn('http-socket = 127.0.0.1:7777', ini)
        self.assertIn('env = CYBORG_CONFIG_FILE=/tmp/c.conf', ini)
        haproxy = shutil.which('haproxy') or '/usr/sbin/haproxy'
        if not os.path.exists(haproxy):
            services.unavailable(self, 'haproxy is not installed')
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'haproxy.cfg')
        with open(path, 'w') as f:
            f.write(deployment.HAProxy.GLOBAL.format(
                socket=path + '.sock') + text)
        check = subprocess.run([haproxy, '-c', '-f', path],
                               capture_output=True, text=True)
        self.assertEqual(0, check.returncode, check.stdout + check.stderr)
