"""Each daemon's [metrics] listener, scraped while the daemons run: the
counters move as the test drives them (counts, never timings)."""

import collections
import concurrent.futures
import functools
import glob
import os
import re
import shutil
import subprocess
import sys

import fixtures
from prometheus_client import mmap_dict
from prometheus_client import parser
import requests

from cyborg.agent import reporter as agent_reporter
from cyborg.common import context
from cyborg.common import keys
from cyborg.common import metrics
from cyborg.common import rpc
from cyborg.common import signing
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests import services
from cyborg.tests.functional import daemons
from cyborg.tests.functional import nova
from cyborg.tests.functional import test_daemons
from cyborg.tests.functional.test_hello import wait_for
from cyborg.tests.unit import test_metrics as test_unit_metrics


def scrape(port):
    """``{(sample name, frozenset of its labels): value}`` of a daemon."""
    response = requests.get('http://127.0.0.1:%d/metrics' % port,
                            timeout=10)
    response.raise_for_status()
    samples = {}
    for family in parser.text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[sample.name, frozenset(sample.labels.items())] = (
                sample.value)
    return samples


def total(samples, name, **labels):
    """The sum of the samples ``name`` having ``labels`` (and any
    others)."""
    wanted = set(labels.items())
    return sum(value for (found, have), value in samples.items()
               if found == name and wanted <= have)


def delta(before, after, name, **labels):
    return total(after, name, **labels) - total(before, name, **labels)


class _MetricsConfig:

    def setUp(self):
        super().setUp()
        self.metrics_ports = collections.defaultdict(daemons.free_port)

    def config(self, name, host, **sections):
        # One listener per daemon; gauges read at every scrape.
        sections.setdefault('metrics', {
            'enabled': True, 'host': '127.0.0.1',
            'port': self.metrics_ports[name.split('-')[0]],
            'gauge_cache_seconds': 0})
        return super().config(name, host, **sections)

    def scrape(self, daemon):
        return scrape(self.metrics_ports[daemon])


class MetricsOnDaemonsTest(_MetricsConfig, test_daemons.NovaStack,
                           base.TestCase):
    """cyborg-api, cyborg-conductor and cyborg-agent as processes on
    RabbitMQ, MariaDB and the real Placement, each serving metrics."""

    def test_counters_follow_a_report_and_a_boot(self):
        rp_uuid, profile = self.start_stack()
        # The agent's first report was applied: the conductor counted it,
        # and the agent its call.
        conductor = wait_for(lambda: self.scrape('conductor'), timeout=10)
        self.assertGreaterEqual(total(
            conductor, 'cyborg_conductor_reports_received_total'), 1)
        self.assertGreaterEqual(total(
            conductor, 'cyborg_conductor_reports_total',
            outcome='applied'), 1)
        # (once the conductor's answer, sent after its Placement sync,
        # came back)
        wait_for(lambda: total(
            self.scrape('agent'), 'cyborg_rpc_client_messages_total',
            method='report_data', kind='call', outcome='ok') >= 1,
            timeout=30)
        # It synced the host's providers to Placement, and wrote them.
        self.assertGreaterEqual(total(
            conductor, 'cyborg_placement_requests_total'), 1)
        self.assertGreaterEqual(total(
            conductor, 'cyborg_placement_request_duration_seconds_count'), 1)
        self.assertGreaterEqual(total(
            conductor, 'cyborg_db_statements_total', kind='insert'), 1)
        # The host is up, heard by its heartbeats; the lease is held.
        wait_for(lambda: total(
            self.scrape('conductor'),
            'cyborg_conductor_heartbeats_total', outcome='accepted') >= 1,
            timeout=30)
        conductor = self.scrape('conductor')
        self.assertEqual(1, total(conductor, 'cyborg_hosts', status='up'))
        self.assertEqual(0, total(conductor, 'cyborg_hosts', status='down'))
        self.assertEqual(1, total(conductor, 'cyborg_conductor_lease_held',
                                  lease='periodic'))
        # Heard within the last minute (heartbeats each second).
        for age in ('cyborg_host_heartbeat_age_seconds_bucket',
                    'cyborg_host_report_age_seconds_bucket'):
            self.assertEqual(1, total(conductor, age, le='60.0'), age)
            self.assertEqual(1, total(conductor, age, le='+Inf'), age)

        before = {name: self.scrape(name) for name in ('api', 'conductor')}
        nova.boot_and_delete(self, self.base, profile, self.hostname,
                             rp_uuid, nova=self.nova)
        after = {name: self.scrape(name) for name in ('api', 'conductor')}

        api = functools.partial(delta, before['api'], after['api'])
        requests_total = 'cyborg_api_requests_total'
        arqs = '/v2/accelerator_requests'
        self.assertEqual(1, api(requests_total, route='/v2/device_profiles',
                                method='GET', status='200'))
        self.assertEqual(1, api(requests_total, route=arqs, method='POST',
                                status='201'))
        self.assertEqual(1, api(requests_total, route=arqs, method='PATCH',
                                status='202'))
        self.assertEqual(1, api(requests_total, route=arqs, method='DELETE',
                                status='204'))
        # One ARQ's GET by uuid, from another project: a 404, by template.
        self.assertEqual(1, api(requests_total, route=arqs + '/{id}',
                                method='GET', status='404'))
        self.assertEqual(0, api(requests_total, route='other'))
        # Nova sends no version: each v2 answer says 2.0.
        self.assertEqual(
            api(requests_total, route=arqs, method='POST'),
            api(requests_total, route=arqs, method='POST',
                microversion='2.0'))
        self.assertEqual(
            api(requests_total, route=arqs, method='POST'),
            api('cyborg_api_request_duration_seconds_count', route=arqs,
                method='POST'))
        for method in ('arq_create', 'arq_apply_patch', 'arq_delete'):
            self.assertEqual(1, api('cyborg_rpc_client_messages_total',
                                    method=method, kind='call',
                                    outcome='ok'), method)

        conductor = functools.partial(delta, before['conductor'],
                                      after['conductor'])
        for method in ('arq_create', 'arq_apply_patch', 'arq_delete'):
            self.assertEqual(1, conductor('cyborg_rpc_server_messages_total',
                                          method=method, outcome='ok'),
                             method)
        self.assertEqual(1, conductor('cyborg_conductor_binds_total',
                                      outcome='Bound'))
        self.assertEqual(0, conductor('cyborg_conductor_binds_total',
                                      outcome='BindFailed'))
        self.assertEqual(1, conductor(
            'cyborg_conductor_bind_duration_seconds_count'))
        self.assertEqual(0, conductor('cyborg_rpc_refusals_total'))
        # Deleted: no ARQ is left in any state.
        self.assertEqual(0, total(after['conductor'], 'cyborg_arqs'))
        # What took time was timed: a sample each.
        self.assertEqual(1, conductor('cyborg_rpc_server_duration_seconds_'
                                      'count', method='arq_create'))
        self.assertEqual(1, api('cyborg_rpc_client_duration_seconds_count',
                                method='arq_create', kind='call'))
        self.assertGreaterEqual(conductor('cyborg_db_statements_total',
                                          kind='update'), 1)
        self.assertGreaterEqual(conductor(
            'cyborg_db_statement_duration_seconds_count', kind='update'), 1)
        self.assertGreaterEqual(api('cyborg_db_statements_total',
                                    kind='select'), 1)
        self.assertEqual(0, api('cyborg_db_statements_total',
                                kind='insert'))

        self.check_arqs_by_state(profile)
        self.check_reports_and_refusals()

    def check_arqs_by_state(self, profile):
        """An ARQ made and not bound is Initial until deleted."""
        response = nova._call(self.base, 'POST', nova.ARQS,
                              nova.USER_AND_SERVICE,
                              {'device_profile_name': profile})
        self.assertEqual(201, response.status_code, response.text)
        [arq] = response.json()['arqs']
        self.assertEqual(1, total(self.scrape('conductor'), 'cyborg_arqs',
                                  state='Initial'))
        response = nova._call(self.base, 'DELETE', '%s?arqs=%s' % (
            nova.ARQS, arq['uuid']), nova.USER_AND_SERVICE)
        self.assertEqual(204, response.status_code, response.text)
        self.assertEqual(0, total(self.scrape('conductor'), 'cyborg_arqs'))

    def as_hosts(self):
        """This process on the daemons' broker, signing as hosts."""
        rpc.register_opts(self.conf)
        self.flags(transport_url=self.transport_url,
                   rpc_topic_prefix='test-%s-' % os.path.basename(self.tmp))
        self.flags(key_dir=self.key_dir, group='security')
        rpc.init(self.conf, keys.KeyStore(self.key_dir), identity=keys.API)
        self.addCleanup(rpc.cleanup)
        return conductor_rpcapi.ConductorAPI()

    def check_reports_and_refusals(self):
        """A report applied, sent again (unchanged), then an older one
        (refused); heartbeats about another host: refused on the
        heartbeat channel and on the conductor's topic."""
        ctx = context.get_admin_context()
        conductor = self.as_hosts()
        sim = 'sim-%s' % os.path.basename(self.tmp)[-6:]
        keys.create(self.key_dir, keys.host_identity(sim))
        self.placement.create_compute_node(sim)
        before = self.scrape('conductor')
        answer = conductor.agent_hello(ctx, host_obj.AgentHello(
            hostname=sim, status='READY', endpoint=sim, version='1',
            drivers=[]), timeout=30)
        self.assertTrue(answer.heartbeat_topic)
        report_hash = agent_reporter.report_hash([], None)
        for seq, expected in ((5, report_hash), (5, report_hash),
                              (4, None)):
            self.assertEqual(expected, conductor.report_data(
                ctx, sim, [], report_hash, report_seq=seq, timeout=30))
        with signing.sending_as(keys.host_identity(sim)):
            conductor.client.prepare(version='1.0').cast(
                ctx, 'agent_heartbeat', hostname=self.hostname)
            conductor._channel(answer.heartbeat_topic).cast(
                ctx, 'agent_heartbeat', hostname=self.hostname)
        wait_for(lambda: total(self.scrape('conductor'),
                               'cyborg_rpc_refusals_total') - total(
            before, 'cyborg_rpc_refusals_total') >= 2, timeout=30)
        after = self.scrape('conductor')
        moved = functools.partial(delta, before, after)
        self.assertEqual(3, moved('cyborg_conductor_reports_received_total'))
        for outcome in ('applied', 'unchanged', 'refused'):
            self.assertEqual(1, moved('cyborg_conductor_reports_total',
                                      outcome=outcome), outcome)
        self.assertEqual(1, moved('cyborg_rpc_refusals_total',
                                  receiver='conductor', reason='sender'))
        self.assertEqual(1, moved('cyborg_rpc_refusals_total',
                                  receiver='heartbeat channel',
                                  reason='sender'))
        self.assertEqual(1, moved('cyborg_conductor_heartbeats_total',
                                  outcome='refused'))
        # Both hosts have reported within the hour.
        self.assertEqual(2, total(after, 'cyborg_host_report_age_seconds_'
                                  'bucket', le='3600.0'))

    def test_listener_stops_with_its_daemon(self):
        self.placement = self.useFixture(
            test_daemons.placement_fixture.Placement(self.conf))
        self.nova = nova.StandInNova().start(self)
        self.api_port = daemons.free_port()
        conductor = self.start('conductor', 'ctl-1')
        port = self.metrics_ports['conductor']
        wait_for(lambda: _answers(port), timeout=60)
        self.assertEqual(0, conductor.terminate())
        self.assertFalse(_answers(port))


def _answers(port):
    try:
        scrape(port)
    except requests.ConnectionError:
        return False
    return True


class GaugesMySQLTest(test_unit_metrics.ConductorGauges, base.TestCase):
    backend = 'mysql'


class GaugesPostgreSQLTest(test_unit_metrics.ConductorGauges,
                           base.TestCase):
    backend = 'postgresql'


class APIWorkersMetricsTest(_MetricsConfig, test_daemons._Daemons,
                            base.TestCase):
    """cyborg-api with two workers: its parent serves the sum of what
    both counted."""

    backend = 'mysql'

    def config(self, name, host, **sections):
        sections.setdefault('api', {'host_ip': '127.0.0.1',
                                    'port': self.api_port,
                                    'api_workers': 2})
        sections.setdefault('DEFAULT', {}).update(auth_strategy='noauth')
        return super().config(name, host, **sections)

    def test_parent_serves_the_sum_of_the_workers(self):
        self.api_port = daemons.free_port()
        base_url = 'http://127.0.0.1:%d' % self.api_port
        api = self.start('api', 'api-1')
        daemons.wait_for_http(base_url + '/v2', daemon=api)
        wait_for(lambda: len(daemons.children(api.process.pid)) == 2,
                 timeout=30)
        before = self.scrape('api')
        count = 20
        for _ in range(count):
            # A version document closes its connection: each request is
            # a new connection, which either worker may take.
            response = requests.get(base_url + '/v2', timeout=10)
            self.assertEqual(200, response.status_code)
        after = self.scrape('api')
        self.assertEqual(count, delta(before, after,
                                      'cyborg_api_requests_total',
                                      route='/v2', method='GET',
                                      status='200'))
        # Served once, by the parent; its directory goes with it.
        self.assertEqual(1, api.output().count('Metrics on '))
        [directory] = re.findall(r'counted in (\S+)', api.output())
        self.assertTrue(os.path.isdir(directory))
        self.assertEqual(0, api.terminate())
        self.assertFalse(_answers(self.metrics_ports['api']))
        self.assertFalse(os.path.exists(directory))


class AllInOneMetricsTest(base.TestCase):
    """cyborg-aio: one listener for its API, conductor and agent."""

    def test_one_listener_serves_every_part(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        api_port, port = daemons.free_port(), daemons.free_port()
        config = daemons.write_config(os.path.join(tmp, 'aio.conf'), {
            'DEFAULT': {'host': 'aio-metrics'},
            'metrics': {'enabled': True, 'port': port,
                        'gauge_cache_seconds': 0}})
        aio = daemons.Daemon(
            self, 'aio', ['--port', str(api_port), '--state-dir',
                          os.path.join(tmp, 'state'), '--config-file',
                          config], os.path.join(tmp, 'aio.log'))
        base_url = 'http://127.0.0.1:%d' % api_port
        daemons.wait_for_http(base_url + '/v2', daemon=aio)
        # Its agent said hello to its conductor, in the process (the
        # listener starts with the conductor, after the API).
        wait_for(lambda: _answers(port) and total(
            scrape(port), 'cyborg_hosts', status='up') == 1, timeout=60)
        before = scrape(port)
        response = requests.get(base_url + '/v2/devices', timeout=30,
                                headers={'X-Auth-Token': 'admin'})
        self.assertEqual(200, response.status_code, response.text)
        after = scrape(port)
        self.assertEqual(1, delta(before, after, 'cyborg_api_requests_total',
                                  route='/v2/devices', method='GET',
                                  status='200'))
        self.assertGreaterEqual(total(
            after, 'cyborg_rpc_server_messages_total', method='agent_hello',
            outcome='ok'), 1)
        self.assertEqual(1, aio.output().count('Metrics on '))
        self.assertEqual(0, aio.terminate())
        self.assertFalse(_answers(port))


def _uwsgi():
    """uWSGI next to this Python (test-requirements.txt), or None."""
    path = os.path.join(os.path.dirname(sys.executable), 'uwsgi')
    return path if os.access(path, os.X_OK) else shutil.which('uwsgi')


class UwsgiMetricsTest(base.TestCase):
    """The API under uwsgi (``cyborg.wsgi.api``), three workers: each
    counts in ``$PROMETHEUS_MULTIPROC_DIR`` and a scrape, whichever
    worker takes it, is the sum of all."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        db = self.useFixture(cyborg_fixtures.Database(self, 'sqlite'))
        self.metrics_port = daemons.free_port()
        self.config = daemons.write_config(
            os.path.join(self.tmp, 'cyborg.conf'), {
                'DEFAULT': {'auth_strategy': 'noauth',
                            'transport_url': 'fake:/'},
                'database': {'connection': db.url},
                'metrics': {'enabled': True, 'port': self.metrics_port}})
        self.directory = os.path.join(self.tmp, 'metrics')

    def test_a_scrape_sums_every_worker(self):
        uwsgi = _uwsgi()
        if uwsgi is None:
            # A test requirement: missing only where the suite was not
            # installed by tools/run-tests; a failure in CI.
            services.unavailable(self, 'uWSGI is not installed (it is in '
                                 'test-requirements.txt)')
        port = daemons.free_port()
        base_url = 'http://127.0.0.1:%d' % port
        # As doc/source/admin/metrics.rst says: the server sets the
        # directory and empties it at its start.
        server = daemons.Daemon(self, 'uwsgi', [
            '--http-socket', '127.0.0.1:%d' % port, '--master',
            '--processes', '3', '--lazy-apps', '--need-app',
            '--die-on-term', '--virtualenv', sys.prefix,
            '--module', 'cyborg.wsgi.api:application',
            '--env', 'CYBORG_CONFIG_FILE=%s' % self.config,
            '--env', 'PROMETHEUS_MULTIPROC_DIR=%s' % self.directory,
            '--exec-asap', 'rm -rf %s' % self.directory,
            '--exec-asap', 'mkdir -p %s' % self.directory],
            os.path.join(self.tmp, 'uwsgi.log'), command=[uwsgi])
        # Every worker loaded the application (each imports cyborg).
        wait_for(lambda: server.output().count('WSGI app 0 ') == 3
                 or not server.running(), timeout=120)
        daemons.wait_for_http(base_url + '/v2', daemon=server)
        wait_for(lambda: _answers(self.metrics_port), timeout=30)
        # The request that waited for the server counted too.
        sent = 1
        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            # Rounds of requests at once until two workers counted some.
            for _round in range(20):
                codes = list(pool.map(
                    lambda _: requests.get(base_url + '/v2',
                                           timeout=10).status_code,
                    range(24)))
                self.assertEqual({200}, set(codes))
                sent += len(codes)
                if len(self._workers_counting()) >= 2:
                    break
        self.assertGreaterEqual(len(self._workers_counting()), 2)
        # Whichever worker answers, each scrape is the sum.
        for _ in range(6):
            self.assertEqual(sent, total(
                scrape(self.metrics_port), 'cyborg_api_requests_total',
                route='/v2', method='GET', status='200'))
        self.assertEqual(0, server.terminate())

    def _workers_counting(self):
        pids = set()
        for path in glob.glob(os.path.join(self.directory, 'counter_*.db')):
            values = mmap_dict.MmapedDict.read_all_values_from_file(path)
            if any('cyborg_api_requests' in key and value
                   for key, value, *_ in values):
                pids.add(path)
        return pids

    def test_without_its_directory_the_application_does_not_load(self):
        env = dict(os.environ, CYBORG_CONFIG_FILE=self.config)
        env.pop(metrics.MULTIPROC_ENV, None)
        result = subprocess.run(
            [sys.executable, '-c', 'import cyborg.wsgi.api'], env=env,
            capture_output=True, text=True, timeout=60, check=False)
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn('cyborg-wsgi-api: error: [metrics] enabled under a '
                      'WSGI server needs $PROMETHEUS_MULTIPROC_DIR',
                      result.stderr)
