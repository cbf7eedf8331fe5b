"""Hosts and their drivers: written by the conductor on hello/heartbeat,
and what the conductor holds of each host's reports (``ReportState``:
hash, generation, Placement's synced generation, sequence) and of its
Placement sync (``sync_pending``)."""

import collections
import datetime

from oslo_utils import timeutils
import sqlalchemy as sa

from cyborg.common import exception
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.objects import host as host_obj


def _host_query(context):
    return context.session.query(models.Host)


def _now(context):
    """The time now as a DATETIME column keeps it (whole seconds on
    MySQL), so that a row written with it is the row a reader gets."""
    now = timeutils.utcnow()
    if context.session.get_bind().dialect.name == 'mysql':
        now = now.replace(microsecond=0)
    return now


def _check_provider_name(context, hostname, resource_provider_name):
    """A host may not hang its devices under another host's compute node
    provider: Invalid when ``resource_provider_name`` is another known
    host's name. (Another host's provider name is not refused: agents on
    one machine, as in tests, share its default, the machine's FQDN.)"""
    if not resource_provider_name or resource_provider_name == hostname:
        return
    other = _host_query(context).filter(
        models.Host.hostname == resource_provider_name).first()
    if other is not None:
        raise exception.Invalid(
            reason='compute node provider %s is host %s\'s, not %s\'s'
            % (resource_provider_name, other.hostname, hostname))


@db_api.retry_on_deadlock
@db_api.writer
def record_hello(context, hostname, endpoint, version, drivers,
                 resource_provider_name=None, agent_id=None, live_for=None):
    """Create or refresh a host and replace its driver list.

    ``resource_provider_name`` is the name of the host's compute node
    provider in Placement as its agent gave it (None: the hostname).
    ``agent_id`` is who the agent is (AgentHello 1.3; None: it does not
    say): AgentConflict, and nothing written, when another agent holds
    the host and is alive (see ``_check_holder``); ``live_for`` is how
    many seconds after its last heartbeat a host's agent is taken for
    alive.
    Returns ``(host, drivers, was_down)``: the host row and its driver
    rows (by name) as written, which are what ``get_by_hostname`` would
    read back, and whether a known host came back after being marked
    down.
    """
    _check_provider_name(context, hostname, resource_provider_name)
    now = _now(context)
    host = _host_query(context).filter_by(hostname=hostname).first()
    if host is not None:
        _check_holder(host, agent_id, now, live_for)
    was_down = host is not None and host.status == 'down'
    if host is None:
        # Every column the caller reads is set: nothing to load later.
        host = models.Host(hostname=hostname, report_generation=0,
                           report_seq=None, created_at=now,
                           updated_at=None)
        context.session.add(host)
    else:
        host.updated_at = now
    host.update({'status': 'up', 'endpoint': endpoint, 'version': version,
                 'resource_provider_name': resource_provider_name,
                 'agent_id': agent_id, 'last_seen_at': now})
    context.session.flush()
    return host, _replace_drivers(context, host, drivers), was_down


def _check_holder(host, agent_id, now, live_for):
    """AgentConflict if ``host`` is held by another agent than
    ``agent_id`` that is alive: the host is up and was heard within
    ``live_for`` seconds. An agent in the holder's seat (its machine and
    state file, which one agent at a time holds) is the holder restarted,
    and takes the host over at once; any other takes it once the holder
    has been silent that long (it died, or moved)."""
    holder = host.agent_id
    if not (agent_id and holder and live_for) or holder == agent_id:
        return
    seconds = (now - host.last_seen_at).total_seconds()
    if (host.status != 'up' or seconds > live_for
            or host_obj.seat_of(holder) == host_obj.seat_of(agent_id)):
        return
    raise exception.AgentConflict(host=host.hostname, holder=holder,
                                  agent=agent_id, seconds=max(seconds, 0))


_DRIVER_COLUMNS = ('device_type', 'version', 'status', 'error')


def _replace_drivers(context, host, drivers):
    """Make the host's driver rows those of ``drivers``; the rows, by
    name."""
    existing = {d.name: d for d in context.session.query(models.HostDriver)
                .filter_by(host_id=host.id)}
    written = []
    for values in drivers:
        columns = {key: values.get(key) for key in _DRIVER_COLUMNS}
        row = existing.pop(values['name'], None)
        if row is None:
            row = models.HostDriver(host_id=host.id, name=values['name'],
                                    **columns)
            context.session.add(row)
        else:
            for key, value in columns.items():
                if getattr(row, key) != value:
                    setattr(row, key, value)
        written.append(row)
    for row in existing.values():
        context.session.delete(row)
    return sorted(written, key=lambda row: row.name)


@db_api.retry_on_deadlock
@db_api.writer
def record_heartbeat(context, hostname, when=None):
    """Refresh a host's last-seen time to ``when`` (the time it was heard;
    default now, never later than now). Returns its status before, or
    None when the heartbeat changes nothing: a host that is not up is
    brought back only by a heartbeat heard after the last one recorded,
    so that a heartbeat replayed later cannot revive a dead host.

    Raises HostNotFound for a host that never said hello. A host that is
    up, the common case, costs one UPDATE.
    """
    now = timeutils.utcnow()
    when = now if when is None else min(when, now)
    later = sa.case((models.Host.last_seen_at < when, when),
                    else_=models.Host.last_seen_at)
    refreshed = context.session.execute(
        sa.update(models.Host).where(models.Host.hostname == hostname,
                                     models.Host.status == 'up')
        .values(last_seen_at=later, updated_at=now)
        .execution_options(synchronize_session=False)).rowcount
    if refreshed:
        return 'up'
    host = _host_query(context).filter_by(hostname=hostname).first()
    if host is None:
        raise exception.HostNotFound(host=hostname)
    if host.last_seen_at is not None and when <= host.last_seen_at:
        return None
    before = host.status
    host.update({'status': 'up', 'last_seen_at': when})
    return before


#: Hosts written by one statement of ``record_heartbeats``.
HEARTBEAT_CHUNK = 1000


def record_heartbeats(context, heard):
    """Refresh the last-seen time of the hosts of ``heard`` ({hostname:
    when heard}) that are up, never back: the hosts heard within the
    same second are moved on to the newest time heard among them, so
    that each host is written less than a second after it was heard (a
    heartbeat signed long ago and replayed now cannot make its host look
    alive); one UPDATE per second and HEARTBEAT_CHUNK hosts, each its own
    transaction (two conductors' chunks never wait for each other in
    turn). Returns the hostnames it did not refresh, down or unknown (one
    SELECT more, only when there are some); the caller handles each as a
    heartbeat of its own (``record_heartbeat``)."""
    by_second = {}
    for hostname in heard:
        by_second.setdefault(heard[hostname].replace(microsecond=0),
                             []).append(hostname)
    refreshed = 0
    for _second, hostnames in sorted(by_second.items()):
        hostnames.sort()
        for start in range(0, len(hostnames), HEARTBEAT_CHUNK):
            chunk = hostnames[start:start + HEARTBEAT_CHUNK]
            refreshed += _refresh(context, chunk,
                                  max(heard[h] for h in chunk))
    if refreshed == len(heard):
        return []
    return sorted(set(heard) - set(_up_of(context, list(heard))))


_HOSTS = models.Host.__table__
_WHEN = sa.bindparam('b_when', type_=_HOSTS.c.last_seen_at.type)
# Never back: another conductor may have written a later time. A Core
# statement built once (the ORM's bulk UPDATE path cost more than the
# statement itself, several times a second at thousands of hosts).
_REFRESH = _HOSTS.update().where(
    _HOSTS.c.hostname.in_(sa.bindparam('b_hostnames', expanding=True)),
    _HOSTS.c.status == 'up').values(
    last_seen_at=sa.case((_HOSTS.c.last_seen_at < _WHEN, _WHEN),
                         else_=_HOSTS.c.last_seen_at),
    updated_at=_WHEN)
_UP_OF = sa.select(_HOSTS.c.hostname).where(
    _HOSTS.c.hostname.in_(sa.bindparam('b_hostnames', expanding=True)),
    _HOSTS.c.status == 'up')


@db_api.retry_on_deadlock
@db_api.writer
def _refresh(context, hostnames, when):
    """Move ``hostnames`` that are up on to ``when``; how many are up."""
    return context.session.connection().execute(
        _REFRESH, {'b_hostnames': hostnames, 'b_when': when}).rowcount


@db_api.reader
def _up_of(context, hostnames):
    return [row.hostname for row in context.session.connection().execute(
        _UP_OF, {'b_hostnames': hostnames})]


def _silent(cutoff):
    """Up hosts not seen since ``cutoff``; not those adopted from upstream
    Cyborg whose cyborg agent never said hello (none can have gone
    silent: their inventory stays as upstream left it in Placement)."""
    return (models.Host.status == 'up', models.Host.last_seen_at < cutoff,
            sa.or_(models.Host.adopted.is_(False),
                   models.Host.version.isnot(None)))


@db_api.reader
def count_silent_hosts(context, timeout):
    """How many up hosts were not seen for ``timeout`` seconds."""
    cutoff = timeutils.utcnow() - datetime.timedelta(seconds=timeout)
    return _host_query(context).filter(*_silent(cutoff)).count()


def mark_silent_hosts_down(context, timeout):
    """Mark down every up host not seen for ``timeout`` seconds.

    Each host is claimed by a conditional UPDATE, so when several
    conductors check at once exactly one of them reports each host.
    Returns the hostnames this call marked down. When every host was
    heard from, the check is one read query and no write transaction.
    """
    cutoff = timeutils.utcnow() - datetime.timedelta(seconds=timeout)
    candidates = _silent_hosts(context, cutoff)
    if not candidates:
        return []
    return _mark_down(context, candidates, cutoff)


@db_api.reader
def _silent_hosts(context, cutoff):
    return [row.hostname for row in context.session.query(
        models.Host.hostname).filter(*_silent(cutoff))]


@db_api.retry_on_deadlock
@db_api.writer
def _mark_down(context, candidates, cutoff):
    marked = []
    for hostname in candidates:
        count = _host_query(context).filter(
            models.Host.hostname == hostname, *_silent(cutoff)).update(
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


def heartbeat_ages(context, bounds):
    """How many hosts were last heard at most each of ``bounds``
    (seconds, ascending) ago, and how many hosts there are: one row of
    sums, whatever the number of hosts (the conductor's metrics)."""
    return _ages(context, models.Host.last_seen_at, bounds)


def report_ages(context, bounds):
    """As :func:`heartbeat_ages`, of the last report written
    (``last_report_at``; a host with none counts in the total only)."""
    return _ages(context, models.Host.last_report_at, bounds)


@db_api.reader
def _ages(context, stamp, bounds):
    now = timeutils.utcnow()
    columns = [sa.func.count(models.Host.id)] + [
        sa.func.coalesce(sa.func.sum(sa.case(
            (stamp >= now - datetime.timedelta(seconds=bound), 1),
            else_=0)), 0)
        for bound in bounds]
    total, *within = context.session.execute(sa.select(*columns)).one()
    return [int(count) for count in within], int(total)


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
    # "= true", not "IS TRUE", which MySQL reads through no index.
    return [row.hostname for row in context.session.query(
        models.Host.hostname).filter(models.Host.sync_pending == sa.true())]


# Core, built once: it runs after every release of an ARQ.
_AWAITING_REPORT = sa.select(_HOSTS.c.hostname).where(
    _HOSTS.c.hostname.in_(sa.bindparam('hostnames', expanding=True)),
    _HOSTS.c.status == 'up', _HOSTS.c.report_generation > 0,
    sa.or_(_HOSTS.c.report_hash.is_(None),
           _HOSTS.c.synced_generation.is_(None),
           _HOSTS.c.synced_generation != _HOSTS.c.report_generation))


@db_api.core_reader
def awaiting_report(context, hostnames):
    """Those of ``hostnames`` that are up and have reported, but whose
    rows do not show their last report (``report_hash`` empty: something
    it no longer lists was kept in use) or that Placement may not show."""
    if not hostnames:
        return []
    return sorted(row.hostname for row in db_api.connection(context).execute(
        _AWAITING_REPORT, {'hostnames': sorted(set(hostnames))}))


@db_api.retry_on_deadlock
@db_api.writer
def forget_sync(context, hostname):
    """Placement may not show the host's rows (a sync failed, perhaps
    half-way): the next report, even an unchanged one, syncs again."""
    context.session.query(models.Host).filter(
        models.Host.hostname == hostname,
        models.Host.synced_generation.isnot(None)).update(
        {'synced_generation': None}, synchronize_session=False)


# Report state

class ReportState(collections.namedtuple(
        'ReportState',
        'host_id report_hash generation synced_generation report_seq')):
    """What the conductor holds of a host's reports."""

    def shows(self, report_hash):
        """Whether the device rows show ``report_hash`` and Placement has
        been synced to them."""
        return bool(report_hash) and self.report_hash == report_hash and (
            self.synced_generation == self.generation)

    def is_stale(self, report_seq):
        """Whether a report sent with ``report_seq`` is older than one
        already applied (a report without a sequence never is)."""
        return (report_seq is not None and self.report_seq is not None
                and report_seq < self.report_seq)


_STATE_COLUMNS = (models.Host.id, models.Host.report_hash,
                  models.Host.report_generation,
                  models.Host.synced_generation, models.Host.report_seq)


def report_state(host):
    """The ReportState of a host row."""
    return ReportState(host.id, host.report_hash, host.report_generation,
                       host.synced_generation, host.report_seq)


@db_api.reader
def get_report_state(context, hostname):
    """What the conductor holds of ``hostname``'s reports; one SELECT."""
    row = (context.session.query(*_STATE_COLUMNS)
           .filter(models.Host.hostname == hostname).first())
    if row is None:
        raise exception.HostNotFound(host=hostname)
    return ReportState(*row)


@db_api.reader
def get_report_states(context, hostnames):
    """``{hostname: ReportState}`` of the known ones; one SELECT."""
    rows = (context.session.query(models.Host.hostname, *_STATE_COLUMNS)
            .filter(models.Host.hostname.in_(sorted(set(hostnames)))))
    return {row[0]: ReportState(*row[1:]) for row in rows}


@db_api.retry_on_deadlock
@db_api.writer
def record_seqs(context, reports):
    """For ``[(host_id, report_hash, report_seq)]`` of reports the
    database shows already: record each sequence, as long as the host
    still shows that hash, synced, and has applied no newer report. A
    list of booleans: False where the host changed meanwhile (its report
    must then go the long way, under the host's lock)."""
    host = models.Host
    done = []
    for host_id, report_hash, report_seq in reports:
        done.append(bool(context.session.query(host).filter(
            host.id == host_id, host.report_hash == report_hash,
            host.synced_generation == host.report_generation,
            sa.or_(host.report_seq.is_(None),
                   host.report_seq <= report_seq)).update(
                {'report_seq': report_seq,
                 'last_report_at': timeutils.utcnow()},
                synchronize_session=False)))
    return done


def lock_host(context, hostname):
    """The host row, locked until the transaction ends (where supported),
    so two conductors never reconcile the same host at once."""
    row = (context.session.query(models.Host)
           .filter(models.Host.hostname == hostname)
           .with_for_update().first())
    if row is None:
        raise exception.HostNotFound(host=hostname)
    return row




def record_report(host, report_hash, report_seq, changed):
    """Record on the locked ``host`` row a report just applied: its hash
    (None: the rows do not show it exactly), its sequence, and when it
    changed any row a new generation, which Placement has yet to be
    synced to. Returns the host's generation."""
    if changed:
        host.report_generation = (host.report_generation or 0) + 1
    host.report_hash = report_hash
    if report_seq is not None:
        host.report_seq = report_seq
    host.last_seen_at = host.last_report_at = timeutils.utcnow()
    return host.report_generation


_MARK_SYNCED = _HOSTS.update().where(
    _HOSTS.c.id == sa.bindparam('host_id'),
    _HOSTS.c.report_generation == sa.bindparam('generation')).values(
    synced_generation=sa.bindparam('generation'))


def mark_synced(context, host_id, generation):
    """Record that Placement shows the host's rows of ``generation``,
    unless a newer report changed them meanwhile. True if recorded."""
    return mark_synced_many(context, [(host_id, generation)])[0]


@db_api.retry_on_deadlock
@db_api.writer
def mark_synced_many(context, hosts):
    """``mark_synced`` of each ``(host_id, generation)``, in one
    transaction; a list of booleans."""
    connection = context.session.connection()
    return [bool(connection.execute(_MARK_SYNCED, {
        'host_id': host_id, 'generation': generation}).rowcount)
        for host_id, generation in hosts]
