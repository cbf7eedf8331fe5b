"""The conductor's gauges read at a scrape: hosts by status and ARQs by
state, one GROUP BY each, kept ``[metrics] gauge_cache_seconds``."""

from cyborg.common import context as cyborg_context
from cyborg.common import metrics
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import hosts as db_hosts


def _hosts():
    return db_hosts.status_counts(cyborg_context.get_admin_context())


def _arqs():
    return db_arqs.state_counts(cyborg_context.get_admin_context())


def collector(conf):
    """A :class:`metrics.ScrapeGauges` of this conductor's gauges."""
    return metrics.ScrapeGauges({
        ('cyborg_hosts', 'Compute hosts known to cyborg, by status (up or '
         'down).', 'status'): _hosts,
        ('cyborg_arqs', 'Accelerator requests, by state.', 'state'): _arqs,
    }, cache_seconds=conf.metrics.gauge_cache_seconds)


def start(conf):
    """The collector, registered when ``[metrics] enabled`` (else None):
    the gauges are read only at a scrape."""
    if not conf.metrics.enabled:
        return None
    gauges = collector(conf)
    metrics.register(gauges)
    return gauges


def stop(gauges):
    if gauges is not None:
        metrics.unregister(gauges)
