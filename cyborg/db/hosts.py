"""Hosts and their drivers: written by the conductor on hello/heartbeat."""

import datetime

from oslo_utils import timeutils
import sqlalchemy as sa

from cyborg.common import exception
from cyborg.db import api as db_api
from cyborg.db import models


def _host_query(context):
    return context.session.query(models.Host)


@db_api.retry_on_deadlock
@db_api.writer
def record_hello(context, hostname, endpoint, version, drivers,
                 resource_provider_name=None):
    """Create or refresh a host and replace its driver list.

    ``resource_provider_name`` is the name of the host's compute node
    provider in Placement as its agent gave it (None: the hostname).
    Returns ``(host, was_down)``: ``was_down`` is True when a known host
    came back after being marked down.
    """
    now = timeutils.utcnow()
    host = _host_query(context).filter_by(hostname=hostname).first()
    was_down = host is not None and host.status == 'down'
    if host is None:
        host = models.Host(hostname=hostname, report_generation=0)
        context.session.add(host)
    host.update({'status': 'up', 'endpoint': endpoint, 'version': version,
                 'resource_provider_name': resource_provider_name,
                 'last_seen_at': now})
    context.session.flush()
    _replace_drivers(context, host, drivers)
    return host, was_down


def _replace_drivers(context, host, drivers):
    existing = {d.name: d for d in context.session.query(models.HostDriver)
                .filter_by(host_id=host.id)}
    for values in drivers:
        row = existing.pop(values['name'], None)
        if row is None:
            row = models.HostDriver(host_id=host.id, name=values['name'])
            context.session.add(row)
        for key in ('device_type', 'version', 'status', 'error'):
            if getattr(row, key) != values.get(key):
                setattr(row, key, values.get(key))
    for row in existing.values():
        context.session.delete(row)


@db_api.retry_on_deadlock
@db_api.writer
def record_heartbeat(context, hostname):
    """Refresh a host's last-seen time. Returns its status before.

    Raises HostNotFound for a host that never said hello.
    """
    host = _host_query(context).filter_by(hostname=hostname).first()
    if host is None:
        raise exception.HostNotFound(host=hostname)
    before = host.status
    host.update({'status': 'up', 'last_seen_at': timeutils.utcnow()})
    return before


@db_api.retry_on_deadlock
@db_api.writer
def mark_silent_hosts_down(context, timeout):
    """Mark down every up host not seen for ``timeout`` seconds.

    Each host is claimed by a conditional UPDATE, so when several
    conductors check at once exactly one of them reports each host.
    Returns the hostnames this call marked down.
    """
    cutoff = timeutils.utcnow() - datetime.timedelta(seconds=timeout)
    candidates = [row.hostname for row in _host_query(context).filter(
        models.Host.status == 'up', models.Host.last_seen_at < cutoff)]
    marked = []
    for hostname in candidates:
        count = _host_query(context).filter(
            models.Host.hostname == hostname, models.Host.status == 'up',
            models.Host.last_seen_at < cutoff).update(
                {'status': 'down'}, synchronize_session=False)
        if count:
            marked.append(hostname)
    return marked


@db_api.reader
def get_by_hostname(context, hostname):
    host = _host_query(context).filter_by(hostname=hostname).first()
    if host is None:
        raise exception.HostNotFound(host=hostname)
    return host, _drivers_of(context, [host.id])[host.id]


@db_api.reader
def resource_provider_name(context, hostname):
    """The compute node provider name the agent of ``hostname`` gave in
    its last hello; None when it gave none or never said hello."""
    return context.session.query(models.Host.resource_provider_name).filter(
        models.Host.hostname == hostname).scalar()


@db_api.reader
def get_all(context):
    hosts = _host_query(context).order_by(models.Host.hostname).all()
    drivers = _drivers_of(context, [h.id for h in hosts])
    return [(host, drivers[host.id]) for host in hosts]


def _drivers_of(context, host_ids):
    result = {host_id: [] for host_id in host_ids}
    if host_ids:
        query = (context.session.query(models.HostDriver)
                 .filter(models.HostDriver.host_id.in_(host_ids))
                 .order_by(models.HostDriver.name))
        for row in query:
            result[row.host_id].append(row)
    return result


@db_api.reader
def status_counts(context):
    """Number of hosts per status; a cheap query for health checks."""
    rows = (context.session.query(models.Host.status,
                                  sa.func.count(models.Host.id))
            .group_by(models.Host.status))
    return dict(rows)


@db_api.retry_on_deadlock
@db_api.writer
def set_sync_pending(context, hostname, pending):
    """Remember whether ``hostname`` waits for a Placement sync."""
    context.session.query(models.Host).filter(
        models.Host.hostname == hostname,
        models.Host.sync_pending != pending).update(
        {'sync_pending': pending}, synchronize_session=False)


@db_api.reader
def sync_pending_hosts(context):
    return [row.hostname for row in context.session.query(
        models.Host.hostname).filter(models.Host.sync_pending.is_(True))]


@db_api.reader
def awaiting_report(context, hostnames):
    """Those of ``hostnames`` that are up and have reported, but whose last
    report is not recorded as applied (``report_hash`` empty: something
    it no longer lists was kept in use, or Placement lags behind)."""
    if not hostnames:
        return []
    return sorted(row.hostname for row in context.session.query(
        models.Host.hostname).filter(
            models.Host.hostname.in_(sorted(set(hostnames))),
            models.Host.status == 'up',
            models.Host.report_generation > 0,
            models.Host.report_hash.is_(None)))


@db_api.retry_on_deadlock
@db_api.writer
def forget_report(context, hostname):
    """Placement may not show the host's accepted report: clear its hash,
    so that the next report, even an unchanged one, is synced again."""
    context.session.query(models.Host).filter(
        models.Host.hostname == hostname,
        models.Host.report_hash.isnot(None)).update(
        {'report_hash': None}, synchronize_session=False)
