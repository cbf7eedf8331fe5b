"""cyborg.common.metrics: bounded labels, the scrape-time gauges and the
listener."""

import datetime

from oslo_utils import timeutils
import prometheus_client as prom
import requests

from cyborg.common import context
from cyborg.common import metrics
from cyborg.common import signing
from cyborg.conductor import gauges
from cyborg.conductor import reporting
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures


class LabelTest(base.TestCase):

    def test_refusal_reasons_have_a_class(self):
        for reason, kind in (
                ('replayed message (already taken by a conductor)',
                 'replay'),
                ('replayed or reordered heartbeat', 'replay'),
                ('unsigned message (method report_data)', 'unsigned'),
                ('malformed signature', 'malformed'),
                ('malformed heartbeat: Expecting value', 'malformed'),
                ('no signature verifies with a key of host:cmp-1',
                 'signature'),
                ('a reply whose signature does not verify', 'signature'),
                ('cannot verify: no key', 'signature'),
                ('sent 400 s from now, beyond the 300 s window', 'stale'),
                ('signed for another topic', 'target'),
                ('signed for server cmp-2, not cmp-1', 'target'),
                ('host:cmp-1 may not send to the agent', 'sender'),
                ('arq_create is for the API only', 'sender'),
                ('report_data about host cmp-2', 'sender'),
                ('a message of 9000000 bytes, over [security] '
                 'max_message_bytes (1048576)', 'size'),
                ('whatever a future check says', 'other'), ('', 'other')):
            self.assertEqual(kind, metrics.reason_class(reason), reason)

    def test_a_refusal_is_counted_by_class(self):
        labels = {'receiver': 'conductor', 'reason': 'replay'}
        name = 'cyborg_rpc_refusals_total'
        before = prom.REGISTRY.get_sample_value(name, labels) or 0
        log = signing.RefusalLog('conductor', clock=lambda: 0.0)
        for _ in range(3):
            log.refused(signing.Refused('replayed message'), 'report_data')
        self.assertEqual(3, prom.REGISTRY.get_sample_value(name, labels)
                         - before)

    def test_placement_routes(self):
        for url, route in (
                ('/resource_providers?name=cmp-1', '/resource_providers'),
                ('/resource_providers/u1', '/resource_providers/{id}'),
                ('/resource_providers/u1/inventories',
                 '/resource_providers/{id}/inventories'),
                ('/allocations/c1', '/allocations/{id}'),
                ('/traits/CUSTOM_X', '/traits/{id}'),
                ('/allocation_candidates', '/allocation_candidates'),
                ('/', '/')):
            self.assertEqual(route, metrics.placement_route(url), url)

    def test_statement_kinds(self):
        for statement, kind in (('SELECT 1', 'select'),
                                ('  insert into x', 'insert'),
                                ('UPDATE hosts SET', 'update'),
                                ('DELETE FROM x', 'delete'),
                                ('SAVEPOINT sa_1', 'other'),
                                ('', 'other')):
            self.assertEqual(kind, metrics.statement_kind(statement))

    def test_http_methods(self):
        self.assertEqual('PATCH', metrics.method_label('PATCH'))
        self.assertEqual('other', metrics.method_label('BREW'))
        self.assertEqual('other', metrics.method_label(None))

    def test_report_outcomes(self):
        self.assertEqual('unchanged', reporting.outcome_label(
            reporting.Done('h1'), 'h1'))
        self.assertEqual('refused', reporting.outcome_label(
            reporting.Done(None), 'h1'))
        self.assertEqual('applied', reporting.outcome_label(
            reporting.Pending(*[None] * len(reporting.Pending._fields)),
            'h1'))


class ScrapeGaugesTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.now = 0.0
        self.reads = 0

    def reader(self):
        self.reads += 1
        return {'up': 2, 'down': 1}

    def gauges(self, cache_seconds=10):
        return metrics.ScrapeGauges(
            {('cyborg_test_hosts', 'Hosts.', 'status'): self.reader},
            cache_seconds=cache_seconds, clock=lambda: self.now)

    def samples(self, gauges):
        return {sample.labels['status']: sample.value
                for family in gauges.collect() for sample in family.samples}

    def test_read_once_per_cache_period(self):
        gauges = self.gauges()
        self.assertEqual({'up': 2, 'down': 1}, self.samples(gauges))
        self.now = 9.9
        self.samples(gauges)
        self.assertEqual(1, self.reads)
        self.now = 10.0
        self.samples(gauges)
        self.assertEqual(2, self.reads)

    def test_registering_reads_nothing(self):
        registry = prom.CollectorRegistry()
        registry.register(self.gauges())
        self.assertEqual(0, self.reads)
        self.assertEqual(2, registry.get_sample_value(
            'cyborg_test_hosts', {'status': 'up'}))

    def test_a_failing_reader_leaves_its_gauge_out(self):
        def broken():
            raise RuntimeError('database down')
        gauges = metrics.ScrapeGauges({('cyborg_test', 'T.', 'x'): broken})
        self.assertEqual([], list(gauges.collect()))


class ListenerTest(base.TestCase):

    def test_disabled_serves_nothing(self):
        self.conf.set_override('enabled', False, 'metrics')
        serving = metrics.serve(self.conf)
        serving.stop()
        self.assertIsNone(metrics.LISTENER._server)

    def test_an_address_in_use_is_said_with_the_options(self):
        self.conf.set_override('enabled', True, 'metrics')
        self.conf.set_override('port', 0, 'metrics')
        first = metrics.serve(self.conf)
        self.addCleanup(first.stop)
        port = metrics.LISTENER.port
        # Another process's listener, as far as this one can tell.
        other = metrics._Listener()
        self.conf.set_override('port', port, 'metrics')
        error = self.assertRaises(metrics.CannotServe, other.start,
                                  self.conf)
        self.assertIn('127.0.0.1:%d ([metrics] host and port)' % port,
                      str(error))
        self.assertIn('in use', str(error))

    def test_served_while_used_and_shared(self):
        self.conf.set_override('enabled', True, 'metrics')
        self.conf.set_override('port', 0, 'metrics')  # any free port
        first = metrics.serve(self.conf)
        url = 'http://127.0.0.1:%d/metrics' % metrics.LISTENER.port
        # The all-in-one's second part shares the listener.
        second = metrics.serve(self.conf)
        self.addCleanup(second.stop)
        self.addCleanup(first.stop)
        self.assertIn('cyborg_api_requests_total',
                      requests.get(url, timeout=10).text)
        first.stop()
        first.stop()  # once only
        self.assertEqual(200, requests.get(url, timeout=10).status_code)
        second.stop()
        self.assertRaises(requests.ConnectionError, requests.get, url,
                          timeout=10)


class ConductorGauges:
    """The conductor's scrape-time gauges on a real ``backend``."""

    backend = 'sqlite'

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(cyborg_fixtures.Database(self,
                                                           self.backend))
        self.ctx = context.get_admin_context()
        self.registry = prom.CollectorRegistry()
        self.registry.register(gauges.collector(self.conf))

    def value(self, name, **labels):
        return self.registry.get_sample_value(name, labels)

    def heard(self, hostname, seconds_ago):
        db_hosts.record_hello(self.ctx, hostname, None, None, [])
        hosts = models.Host.__table__
        with self.db.engine.begin() as connection:
            connection.execute(hosts.update().where(
                hosts.c.hostname == hostname).values(
                    last_seen_at=timeutils.utcnow()
                    - datetime.timedelta(seconds=seconds_ago)))

    def test_hosts_arqs_and_heartbeat_ages(self):
        self.heard('cmp-1', 1)
        self.heard('cmp-2', 45)
        self.heard('cmp-3', 7200)
        self.assertEqual(3, self.value('cyborg_hosts', status='up'))
        self.assertIsNone(self.value('cyborg_arqs', state='Initial'))
        age = 'cyborg_host_heartbeat_age_seconds_bucket'
        self.assertEqual(1, self.value(age, le='5.0'))
        self.assertEqual(1, self.value(age, le='30.0'))
        self.assertEqual(2, self.value(age, le='60.0'))
        self.assertEqual(2, self.value(age, le='3600.0'))
        self.assertEqual(3, self.value(age, le='+Inf'))
        self.assertEqual(3, self.value(
            'cyborg_host_heartbeat_age_seconds_gcount'))

    def test_served_in_the_text_format(self):
        self.heard('cmp-1', 1)
        text = prom.generate_latest(self.registry).decode()
        self.assertIn('cyborg_hosts{status="up"} 1.0', text)
        self.assertIn('cyborg_host_heartbeat_age_seconds_bucket{le="+Inf"} '
                      '1.0', text)

    def test_no_hosts(self):
        self.assertEqual(0, self.value(
            'cyborg_host_heartbeat_age_seconds_bucket', le='+Inf'))
        self.assertIsNone(self.value('cyborg_hosts', status='up'))


class ConductorGaugesTest(ConductorGauges, base.TestCase):
    pass
