"""What the benchmarks read of the daemons' own metrics.

A benchmark starts each cyborg daemon with ``[metrics] enabled`` on a
loopback port of its own (:func:`metrics_options`) and scrapes
``/metrics`` before and after each phase (:func:`scrape`): the numbers
it prints are the differences of the counters an operator's Prometheus
reads (doc/source/admin/metrics.rst), not counts of hooks of its own.

The conductor reads some gauges from the database at a scrape (hosts by
status, ARQs by state): with ``gauge_cache_seconds`` as long as a run
(:data:`GAUGE_CACHE_S`) and one scrape when the daemons are up
(:func:`scrape` once before the first phase), the later scrapes add no
statement of their own to what is counted.
"""

import requests
from prometheus_client import parser

#: ``[metrics] gauge_cache_seconds`` of the benchmarks' conductors.
GAUGE_CACHE_S = 24 * 3600

STATEMENTS = 'cyborg_db_statements_total'
RPC_SENT = 'cyborg_rpc_client_messages_total'
BINDS = 'cyborg_conductor_binds_total'
REPORTS = 'cyborg_conductor_reports_total'


def metrics_options(port):
    """The ``[metrics]`` section of a daemon serving on ``port``."""
    return {'enabled': 'true', 'host': '127.0.0.1', 'port': port,
            'gauge_cache_seconds': GAUGE_CACHE_S}


def parse(text):
    """``{(sample name, ((label, value), ...)): value}`` of a scrape's
    text."""
    found = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            found[key] = sample.value
    return found


def scrape(url, timeout=30):
    """The samples the daemon at ``url`` (``http://host:port``) serves."""
    response = requests.get(url.rstrip('/') + '/metrics', timeout=timeout)
    response.raise_for_status()
    return parse(response.text)


def scrape_all(urls):
    """``{name: samples}`` of the daemons of ``urls`` (``{name: url}``)."""
    return {name: scrape(url) for name, url in urls.items()}


def by_label(samples, name, label):
    """``{label value: sum}`` of the samples ``name``, summed over their
    other labels."""
    totals = {}
    for (sample, labels), value in samples.items():
        if sample == name:
            key = dict(labels).get(label, '')
            totals[key] = totals.get(key, 0) + value
    return totals


def delta(after, before, name, label):
    """How much ``name`` grew between two scrapes, by ``label``; labels
    that did not grow are left out."""
    grown = by_label(after, name, label)
    for key, value in by_label(before, name, label).items():
        grown[key] = grown.get(key, 0) - value
    return {key: value for key, value in sorted(grown.items()) if value}


def summed_delta(after, before, name, label, names=None):
    """:func:`delta` summed over the daemons of two :func:`scrape_all`
    answers (those of ``names`` only, when given)."""
    total = {}
    for daemon in names or after:
        for key, value in delta(after[daemon], before[daemon], name,
                                label).items():
            total[key] = total.get(key, 0) + value
    return total


def messages(sent_by_kind):
    """Messages on the broker of ``{kind: sent}`` (``call``, ``cast``):
    a call is answered, so it counts twice."""
    return (2 * sent_by_kind.get('call', 0)
            + sent_by_kind.get('cast', 0))


def phase(after, before, names=None):
    """What the daemons (``names``: all) counted between two
    :func:`scrape_all`: statements by kind, messages sent (a reply for
    each call), binds and reports by outcome."""
    statements = summed_delta(after, before, STATEMENTS, 'kind', names)
    sent = summed_delta(after, before, RPC_SENT, 'kind', names)
    return {'statements': sum(statements.values()),
            'statements_by_kind': statements,
            'rpc_messages': messages(sent),
            'binds_by_outcome': summed_delta(after, before, BINDS,
                                             'outcome', names),
            'reports_by_outcome': summed_delta(after, before, REPORTS,
                                               'outcome', names)}
