"""The conductor's gauges read at a scrape: hosts by status and ARQs by
state (one GROUP BY each) and how long ago each host was heard and last
reported (one row of sums each), kept ``[metrics] gauge_cache_seconds``."""

from cyborg.common import context as cyborg_context
from cyborg.common import metrics
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import hosts as db_hosts


def _hosts():
    return db_hosts.status_counts(cyborg_context.get_admin_context())


def _arqs():
    return db_arqs.state_counts(cyborg_context.get_admin_context())


#: The upper bounds, in seconds, of the heartbeat ages counted.
AGE_BUCKETS = (5, 10, 30, 60, 120, 300, 600, 1800, 3600)


def _buckets(ages):
    within, total = ages(cyborg_context.get_admin_context(), AGE_BUCKETS)
    return (list(zip(AGE_BUCKETS, within, strict=True))
            + [(float('inf'), total)])


def _heartbeat_ages():
    return _buckets(db_hosts.heartbeat_ages)


def _report_ages():
    return _buckets(db_hosts.report_ages)


def collector(conf):
    """A :class:`metrics.ScrapeGauges` of this conductor's gauges."""
    return metrics.ScrapeGauges({
        ('cyborg_hosts', 'Compute hosts known to cyborg, by status (up or '
         'down).', 'status'): _hosts,
        ('cyborg_arqs', 'Accelerator requests, by state.', 'state'): _arqs,
        ('cyborg_host_heartbeat_age_seconds', 'Hosts by how long ago their '
         'last heartbeat was recorded.', None): _heartbeat_ages,
        ('cyborg_host_report_age_seconds', 'Hosts by how long ago their '
         'last report was written.', None): _report_ages,
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
