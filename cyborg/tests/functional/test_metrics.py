"""Each daemon's [metrics] listener, scraped while the daemons run: the
counters move as the test drives them (counts, never timings)."""

import collections
import functools
import os
import re

import fixtures
from prometheus_client import parser
import requests

from cyborg.tests import base
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
        age = 'cyborg_host_heartbeat_age_seconds_bucket'
        self.assertEqual(1, total(conductor, age, le='60.0'))
        self.assertEqual(1, total(conductor, age, le='+Inf'))

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
