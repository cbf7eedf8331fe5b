"""cyborg.common.metrics: bounded labels, the scrape-time gauges and the
listener."""

import datetime
import itertools
import json
import os
import re
import struct
import sys
from unittest import mock

import fixtures
from oslo_utils import timeutils
import prometheus_client as prom
import requests
import testtools

from cyborg.common import context
from cyborg.common import metrics
from cyborg.common import signing
from cyborg.conductor import gauges
from cyborg.conductor import reporting
from cyborg.db import api as db_api
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import benchtools
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

    def test_a_child_is_made_once_per_labels(self):
        children = metrics.Children(metrics.DB_STATEMENTS)
        with mock.patch.object(metrics.DB_STATEMENTS, 'labels',
                               wraps=metrics.DB_STATEMENTS.labels) as labels:
            for _ in range(3):
                children['select',].inc()
        self.assertEqual(1, labels.call_count)
        self.assertIs(metrics.DB_STATEMENTS.labels('select'),
                      children['select',])

    def test_rpc_outcomes(self):
        def value(name, **labels):
            return prom.REGISTRY.get_sample_value(name, labels) or 0
        ok = {'method': 'unit_test_m', 'outcome': 'ok'}
        error = dict(ok, outcome='error')
        count = 'cyborg_rpc_server_messages_total'
        before = value(count, **ok), value(count, **error)
        with metrics.rpc_server('unit_test_m'):
            pass
        with testtools.ExpectedException(ValueError):
            with metrics.rpc_server('unit_test_m'):
                raise ValueError('raised')
        self.assertEqual((before[0] + 1, before[1] + 1),
                         (value(count, **ok), value(count, **error)))
        self.assertEqual(2, value('cyborg_rpc_server_duration_seconds_count',
                                  method='unit_test_m'))

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

    def test_under_a_wsgi_server_the_directory_is_required(self):
        self.conf.set_override('enabled', True, 'metrics')
        for environ, said in (({}, 'unset'), (
                {metrics.MULTIPROC_ENV: '/nonexistent/cyborg-metrics'},
                '/nonexistent/cyborg-metrics is not a directory')):
            error = self.assertRaises(metrics.CannotServe,
                                      metrics.serve_wsgi, self.conf,
                                      environ)
            self.assertIn('needs $PROMETHEUS_MULTIPROC_DIR', str(error))
            self.assertIn(said, str(error))
        self.conf.set_override('enabled', False, 'metrics')
        metrics.serve_wsgi(self.conf, {}).stop()

    def test_workers_share_the_port(self):
        registry = prom.CollectorRegistry()
        prom.Counter('cyborg_unit_shared', 'T.', registry=registry).inc(2)
        first, _ = metrics._serve_reusing_port('127.0.0.1', 0, registry)
        self.addCleanup(first.server_close)
        self.addCleanup(first.shutdown)
        port = first.server_address[1]
        # A second worker binds the same port.
        second, _ = metrics._serve_reusing_port('127.0.0.1', port, registry)
        self.addCleanup(second.server_close)
        self.addCleanup(second.shutdown)
        for _ in range(4):
            self.assertIn('cyborg_unit_shared_total 2.0', requests.get(
                'http://127.0.0.1:%d/metrics' % port, timeout=10).text)

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

    def reported(self, hostname, seconds_ago):
        hosts = models.Host.__table__
        with self.db.engine.begin() as connection:
            connection.execute(hosts.update().where(
                hosts.c.hostname == hostname).values(
                    last_report_at=timeutils.utcnow()
                    - datetime.timedelta(seconds=seconds_ago)))

    def test_report_ages(self):
        for hostname in ('cmp-1', 'cmp-2', 'cmp-3'):
            self.heard(hostname, 1)
        self.reported('cmp-1', 2)
        self.reported('cmp-2', 100)
        # cmp-3 never reported: in the total only.
        age = 'cyborg_host_report_age_seconds_bucket'
        self.assertEqual(1, self.value(age, le='5.0'))
        self.assertEqual(1, self.value(age, le='60.0'))
        self.assertEqual(2, self.value(age, le='120.0'))
        self.assertEqual(2, self.value(age, le='3600.0'))
        self.assertEqual(3, self.value(age, le='+Inf'))

    def last_report_at(self, hostname):
        return db_hosts.get_by_hostname(self.ctx, hostname)[0].last_report_at

    def test_a_written_report_is_stamped(self):
        self.heard('cmp-1', 1)
        self.assertIsNone(self.last_report_at('cmp-1'))
        # Applied under the host's lock (the UPDATE of last_seen_at).
        started = timeutils.utcnow().replace(microsecond=0)
        with db_api.writer.using(self.ctx):
            host = db_hosts.lock_host(self.ctx, 'cmp-1')
            db_hosts.record_report(host, 'h1', 1, True)
        first = self.last_report_at('cmp-1')
        self.assertGreaterEqual(first, started)
        # A new sequence of a report shown already (its one UPDATE).
        self.reported('cmp-1', 600)
        db_hosts.mark_synced(self.ctx, db_hosts.get_report_state(
            self.ctx, 'cmp-1').host_id, 1)
        state = db_hosts.get_report_state(self.ctx, 'cmp-1')
        self.assertEqual([True], db_hosts.record_seqs(
            self.ctx, [(state.host_id, 'h1', 2)]))
        self.assertGreaterEqual(self.last_report_at('cmp-1'), started)

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


TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                   '..'))
DASHBOARD = os.path.join(TOP, 'doc', 'source', 'admin',
                         'cyborg-dashboard.json')


def served_names(conf):
    """Every sample name cyborg's daemons serve: the registry's metrics
    and the conductor's scrape-time gauges."""
    suffixes = {'counter': ('_total',), 'gauge': ('',),
                'histogram': ('_bucket', '_sum', '_count'),
                'gaugehistogram': ('_bucket', '_gcount', '_gsum')}
    names = set()
    for family in prom.REGISTRY.collect():
        names.update(family.name + suffix
                     for suffix in suffixes.get(family.type, ('',)))
    for name, _doc, label in gauges.collector(conf).readers:
        kind = 'gauge' if label else 'gaugehistogram'
        names.update(name + suffix for suffix in suffixes[kind])
    return names


class DashboardTest(base.TestCase):
    """doc/source/admin/cyborg-dashboard.json: what Grafana's dashboard
    model needs, and queries of metrics cyborg serves."""

    def setUp(self):
        super().setUp()
        with open(DASHBOARD) as f:
            self.dashboard = json.load(f)
        self.tool = benchtools.load('dashboard')

    def test_dashboard_model(self):
        board = self.dashboard
        self.assertIsInstance(board['schemaVersion'], int)
        self.assertGreaterEqual(board['schemaVersion'], 36)
        for key in ('title', 'uid', 'time', 'panels', 'templating'):
            self.assertIn(key, board)
        [variable] = [v for v in board['templating']['list']
                      if v['type'] == 'datasource']
        self.assertEqual('prometheus', variable['query'])
        ids = [panel['id'] for panel in board['panels']]
        self.assertEqual(len(ids), len(set(ids)))
        cells = set()
        for panel in board['panels']:
            grid = panel['gridPos']
            for key in ('x', 'y', 'w', 'h'):
                self.assertIsInstance(grid[key], int, panel['title'])
            self.assertLessEqual(grid['x'] + grid['w'], 24, panel['title'])
            taken = {(x, y) for x in range(grid['x'], grid['x'] + grid['w'])
                     for y in range(grid['y'], grid['y'] + grid['h'])}
            self.assertFalse(cells & taken, 'overlaps: ' + panel['title'])
            cells |= taken
            self.assertEqual('${%s}' % variable['name'],
                             panel['datasource']['uid'])
            self.assertEqual('prometheus', panel['datasource']['type'])
            refs = [target['refId'] for target in panel['targets']]
            self.assertTrue(refs, panel['title'])
            self.assertEqual(len(refs), len(set(refs)), panel['title'])

    def test_what_the_issue_asks_is_shown(self):
        titles = ' '.join(p['title'] for p in self.dashboard['panels'])
        for words in ('Hosts up', 'Hosts down', 'Report', 'Binds',
                      'Bind latency', 'Refusals', 'Placement latency',
                      'API latency'):
            self.assertIn(words, titles)

    def test_queries_read_metrics_cyborg_serves(self):
        served = served_names(self.conf)
        for panel in self.dashboard['panels']:
            for target in panel['targets']:
                expr = target['expr'].replace('$__rate_interval', '5m')
                names = self.tool.metric_names(expr)
                self.assertTrue(names, expr)
                self.assertLessEqual(names, served, expr)

    def test_every_panel_draws_from_samples(self):
        # Two scrapes of every sample the queries read: each panel has
        # a line to draw.
        def samples(value):
            found = {}
            for panel in self.dashboard['panels']:
                for target in panel['targets']:
                    expr = target['expr'].replace('$__rate_interval', '1m')
                    for name in self.tool.metric_names(expr):
                        for le, status in itertools.product(
                                ('0.1', '1.0', '+Inf'), ('up', 'down')):
                            found[name, frozenset({
                                'le': le, 'status': status,
                                'outcome': 'refused', 'reason': 'replay',
                                'route': '/x'}.items())
                            ] = value * (1 + float(le == '+Inf'))
            return found
        scraped = self.tool.Samples([(0.0, samples(1.0)),
                                     (10.0, samples(5.0))])
        for panel in self.dashboard['panels']:
            lines = self.tool.panel_series(panel, scraped, 60, 10)
            self.assertTrue(lines, panel['title'])

    def test_draws_a_png_from_a_file_of_scrapes(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        scrapes, out = (os.path.join(tmp, name)
                        for name in ('scrapes.jsonl', 'dashboard.png'))
        with open(scrapes, 'w') as f:
            for when, count in ((0, 1), (5, 3), (10, 8)):
                f.write(json.dumps({'t': when, 'samples': [
                    ['cyborg_hosts', {'status': 'up', 'instance': 'ctl-1'},
                     count],
                    ['cyborg_conductor_binds_total', {'outcome': 'Bound'},
                     count]]}) + '\n')
        with mock.patch.object(sys, 'argv', [
                'dashboard', '--scrapes', scrapes, '--out', out,
                '--interval', '5', '--window', '10']):
            self.assertEqual(0, self.tool.main())
        with open(out, 'rb') as f:
            png = f.read()
        self.assertEqual(b'\x89PNG\r\n\x1a\n', png[:8])
        width, height = struct.unpack('>II', png[16:24])
        self.assertEqual((1280, 44 + 4 * 300), (width, height))

    def test_promql_subset(self):
        tool = self.tool
        self.assertEqual(0.5, tool.quantile(0.25, [(1.0, 5),
                                                   (float('inf'), 10)]))
        # Counts reset by a restart are counted from 0 again.
        self.assertEqual(1.0, tool._rate([(0, 5), (5, 10), (10, 5)]))
        self.assertEqual(3.0, tool.quantile(0.5, [(1.0, 2), (5.0, 6),
                                                   (float('inf'), 8)]))
        self.assertEqual(5.0, tool.quantile(0.99, [(1.0, 2), (5.0, 6),
                                                   (float('inf'), 8)]))
        self.assertRaises(ValueError, tool.Parser, 'sum(foo[5m]) !')
        self.assertRaises(ValueError, tool.Parser('sum(foo[5m]').parse)
        self.assertRaises(ValueError, tool.Parser('foo bar').parse)
        self.assertEqual(
            ('agg', 'sum', ('le', 'route'), ('call', 'rate', [
                ('sel', 'x_bucket', {'a': 'b'}, 300.0)])),
            tool.Parser('sum by (le, route) (rate(x_bucket{a="b"}[5m]))')
            .parse())


class MetricsTableTest(base.TestCase):
    """doc/source/admin/metrics.rst's table names every metric served."""

    def test_one_row_per_metric(self):
        with open(os.path.join(TOP, 'doc', 'source', 'admin',
                               'metrics.rst')) as f:
            text = f.read()
        rows = set(re.findall(r'^   \* - ``(cyborg_\w+)``', text, re.M))
        families = {family.name for family in prom.REGISTRY.collect()
                    if family.name.startswith('cyborg_')}
        families |= {key[0] for key in gauges.collector(self.conf).readers}
        counters = {family.name for family in prom.REGISTRY.collect()
                    if family.type == 'counter'}
        expected = {name + '_total' if name in counters else name
                    for name in families}
        self.assertEqual(expected, rows)
