"""Adopt the database of a running OpenStack Cyborg, keeping every uuid.

``cyborg-dbsync adopt --from URL`` reads upstream's tables (releases 14.0
to 17.0.0, recognised by their ``alembic_version``) with SQLAlchemy Core
reflection and writes ours in ONE transaction:

- devices, control path ids, deployables (with ``rp_uuid``), attributes,
  attach handles (with ``in_use``) and device profiles keep their uuids
  and their integer ids too, so every reference between them, and the
  ``device_id`` the API shows, stays what it was;
- ARQs keep their uuid, state, instance, host, provider, handle and
  ``project_id``. An ARQ without ``project_id`` (made before upstream
  filled it in 2026) keeps none: only admins and services (Nova) see it
  until its project is set. Bound, BindFailed and Deleting ARQs count as
  told to Nova; one left BindStarted gets the name ``adopted`` as its binding
  conductor, so our conductors fail it cleanly, and tell Nova, once the
  bind timeout has passed;
- one ``hosts`` row per device host name (upstream's devices are named by
  the compute node provider their agent found in Placement), marked as
  synced to Placement: the first report of our agent that finds the same
  hardware then writes nothing to Placement. Until such a report the host
  is ``adopted``: a report that differs (our drivers see a device
  otherwise than upstream's did) is logged and not applied, until the
  operator accepts it (``accept_host``).

A row that cannot be adopted (a device type we do not know, a
deployable name used twice, a profile whose JSON has no groups, and
everything that hangs on such a row) is listed with its reason; the real
run refuses to go on while there is one unless told to leave them out.
The plan is computed from the rows alone (``plan``), so ``--dry-run``
shows exactly what the real run would write.
"""

import collections
import json
import uuid as uuid_lib

from oslo_utils import timeutils
import sqlalchemy as sa

from cyborg.common import states
from cyborg.db import models
from cyborg.objects import fields

#: Upstream's alembic revisions we can read, and the releases at them.
KNOWN_REVISIONS = {
    '6c77bd6afea5': '14.x to 16.x',
    '9625668549b5': '17.0.0 (pre-release)',
    'a35b4295a0e5': '17.0.0 (pre-release)',
    'b47c8f2d1e3a': '17.0.0',
}

#: Upstream's tables we read, parents first.
SOURCE_TABLES = ('device_profiles', 'devices', 'controlpath_ids',
                 'deployables', 'attributes', 'attach_handles',
                 'extended_accelerator_requests')

#: Our tables a real run fills or, with ``force``, empties first
#: (children first). ``adoptions`` keeps the record of every run.
TARGET_TABLES = ('accelerators', 'extended_accelerator_requests',
                 'attach_handles', 'attributes', 'deployables',
                 'controlpath_ids', 'devices', 'device_profiles',
                 'host_hardware', 'host_drivers', 'hosts')

#: The name an adopted, unfinished bind carries as its conductor.
ADOPTED_CONDUCTOR = 'adopted'

#: Upstream's ``device_state`` values that say nothing is wrong.
_QUIET_DEVICE_STATES = (None, 'available', 'allocated')

#: ARQ states in which upstream has told Nova how the bind ended (or,
#: Deleting, Nova needs to hear nothing more).
_TOLD_NOVA = (states.BOUND, states.BIND_FAILED, states.DELETING)

Rejected = collections.namedtuple('Rejected', 'table uuid reason')


class AdoptError(Exception):
    """Adoption cannot start or go on; one line for the operator."""


class Plan:
    """What an adoption writes: ``rows`` ({our table: [values]}, parents
    first), the rows it leaves out (``rejected``) and remarks on rows
    adopted with a change (``notes``)."""

    def __init__(self, revision):
        self.revision = revision
        self.release = KNOWN_REVISIONS[revision]
        self.rows = collections.OrderedDict(
            (table, []) for table in ('device_profiles', 'devices',
                                      'controlpath_ids', 'deployables',
                                      'attributes', 'attach_handles',
                                      'extended_accelerator_requests',
                                      'hosts'))
        self.rejected = []
        self.notes = []

    def counts(self):
        return {table: len(rows) for table, rows in self.rows.items()}

    def summary(self):
        """The lines ``--dry-run`` prints."""
        lines = ['Upstream Cyborg %s (alembic revision %s).'
                 % (self.release, self.revision), 'Would adopt:']
        lines += ['  %-31s %d' % (table, n)
                  for table, n in self.counts().items()]
        if self.rows['hosts']:
            lines.append("Hosts (each one's cyborg agent must use this name, "
                         '[DEFAULT] host):')
            lines += ['  %s' % h['hostname'] for h in self.rows['hosts']]
        lines.append('Cannot adopt: %d row(s)' % len(self.rejected))
        lines += ['  %s %s: %s' % r for r in self.rejected]
        if self.notes:
            lines.append('Notes:')
            lines += ['  %s' % note for note in self.notes]
        return lines


def read_source(url):
    """``(revision, {table: [row dicts ordered by id]})`` of the upstream
    database at ``url``. AdoptError for a bad URL, a database that does
    not answer, or one at an alembic revision we do not know."""
    try:
        engine = sa.create_engine(url)
    except (sa.exc.ArgumentError, ImportError, ValueError) as e:
        raise AdoptError('bad upstream database URL %r: %s'
                         % (_hide_password(url), e)) from e
    try:
        with engine.connect() as connection:
            revision = _source_revision(connection)
            metadata = sa.MetaData()
            metadata.reflect(connection, only=SOURCE_TABLES)
            return revision, {
                name: [dict(row._mapping) for row in connection.execute(
                    sa.select(metadata.tables[name])
                    .order_by(metadata.tables[name].c.id))]
                for name in SOURCE_TABLES}
    except sa.exc.InvalidRequestError as e:
        raise AdoptError('the upstream database lacks tables of '
                         'Cyborg: %s' % _first_line(e)) from e
    except sa.exc.DBAPIError as e:
        raise AdoptError('cannot read the upstream database at %s: %s'
                         % (_hide_password(url), _first_line(e))) from e
    finally:
        engine.dispose()


def _source_revision(connection):
    if not sa.inspect(connection).has_table('alembic_version'):
        raise AdoptError('the upstream database has no alembic_version '
                         'table: it is not a Cyborg database, or is empty')
    revisions = [row[0] for row in connection.execute(
        sa.text('SELECT version_num FROM alembic_version'))]
    if len(revisions) != 1 or revisions[0] not in KNOWN_REVISIONS:
        raise AdoptError(
            'unknown upstream Cyborg version (alembic revision %s); '
            'adoption reads releases 14.0 to 17.0.0 (revisions %s): '
            'upgrade upstream to one of them first'
            % (', '.join(revisions) or 'none',
               ', '.join(sorted(KNOWN_REVISIONS))))
    return revisions[0]


def _hide_password(url):
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return '<unparsable URL>'


def _first_line(error):
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def plan(revision, source, now=None):
    """The Plan for upstream's rows ``source`` (as ``read_source`` gives
    them) at ``revision``."""
    result = Plan(revision)
    builder = _Planner(result, now or timeutils.utcnow())
    for table in SOURCE_TABLES:
        for row in source.get(table, ()):
            getattr(builder, table)(row)
    builder.hosts()
    return result


class _Planner:
    """Turns upstream's rows into ours, table by table, parents first;
    the ids of each table's adopted rows let children see whether their
    parent was adopted."""

    def __init__(self, result, now):
        self.result = result
        self.now = now
        self.adopted = collections.defaultdict(dict)  # table: {id: row}
        self.deployable_names = {}
        self.attribute_keys = set()

    def _keep(self, table, source, values):
        values.update(id=source['id'], uuid=source['uuid'],
                      created_at=source.get('created_at'),
                      updated_at=source.get('updated_at'))
        self.result.rows[table].append(values)
        self.adopted[table][source['id']] = values

    def _reject(self, table, source, reason):
        self.result.rejected.append(Rejected(table, source['uuid'], reason))

    def _missing(self, table, row_id):
        return row_id is not None and row_id not in self.adopted[table]

    def device_profiles(self, row):
        try:
            groups = json.loads(row['profile_json'])['groups']
        except (TypeError, ValueError, KeyError):
            groups = None
        if not isinstance(groups, list) or not all(
                isinstance(group, dict) for group in groups):
            self._reject('device_profiles', row,
                         'profile_json has no list of groups')
            return
        self._keep('device_profiles', row, {
            'name': row['name'], 'profile_json': row['profile_json'],
            'description': row.get('description')})

    def devices(self, row):
        if row['type'] not in fields.DeviceType.ALL:
            self._reject('devices', row, 'device type %s is unknown to '
                         'cyborg' % row['type'])
            return
        state = row.get('device_state')
        if state not in _QUIET_DEVICE_STATES:
            self.result.notes.append(
                'devices %s: upstream device_state %s is not kept (cyborg '
                'has no such field)' % (row['uuid'], state))
        values = {key: row[key] for key in (
            'type', 'vendor', 'model', 'std_board_info', 'vendor_board_info',
            'hostname')}
        values['status'] = row.get('status') or 'enabled'
        self._keep('devices', row, values)

    def controlpath_ids(self, row):
        if self._missing('devices', row['device_id']):
            self._reject('controlpath_ids', row, 'its device is not adopted')
            return
        self._keep('controlpath_ids', row, {
            key: row[key] for key in ('device_id', 'cpid_type', 'cpid_info')})

    def deployables(self, row):
        if self._missing('devices', row['device_id']):
            self._reject('deployables', row, 'its device is not adopted')
            return
        other = self.deployable_names.get(row['name'])
        if other is not None:
            self._reject('deployables', row, 'its name %s is the name of '
                         'deployable %s too' % (row['name'], other))
            return
        if self._missing('deployables', row['parent_id']) or self._missing(
                'deployables', row['root_id']):
            self._reject('deployables', row,
                         'its parent or root is not adopted')
            return
        derived = str(uuid_lib.uuid3(uuid_lib.NAMESPACE_DNS, row['name']))
        if row['rp_uuid'] not in (None, derived):
            self.result.notes.append(
                'deployables %s: rp_uuid %s is not the uuid derived from '
                'its name (%s); Placement may show it twice'
                % (row['uuid'], row['rp_uuid'], derived))
        self.deployable_names[row['name']] = row['uuid']
        self._keep('deployables', row, {
            key: row[key] for key in (
                'parent_id', 'root_id', 'name', 'num_accelerators',
                'device_id', 'rp_uuid', 'driver_name', 'bitstream_id')})

    def attributes(self, row):
        key = (row['deployable_id'], row['key'])
        if self._missing('deployables', row['deployable_id']):
            reason = 'its deployable is not adopted'
        elif len(row['key']) > 255:
            reason = 'its key is longer than 255 characters'
        elif key in self.attribute_keys:
            reason = 'its deployable has another attribute %s' % row['key']
        else:
            self.attribute_keys.add(key)
            self._keep('attributes', row, {
                'deployable_id': row['deployable_id'], 'key': row['key'],
                'value': row['value']})
            return
        self._reject('attributes', row, reason)

    def attach_handles(self, row):
        if self._missing('deployables', row['deployable_id']) or (
                self._missing('controlpath_ids', row['cpid_id'])):
            self._reject('attach_handles', row, 'its deployable or control '
                         'path id is not adopted')
            return
        self._keep('attach_handles', row, {
            'deployable_id': row['deployable_id'], 'cpid_id': row['cpid_id'],
            'in_use': bool(row['in_use']),
            'attach_type': row['attach_type'],
            'attach_info': row['attach_info']})

    def extended_accelerator_requests(self, row):
        table = 'extended_accelerator_requests'
        if row['state'] not in states.ALL:
            self._reject(table, row, 'state %s is unknown to cyborg'
                         % row['state'])
            return
        if self._missing('device_profiles', row['device_profile_id']):
            self._reject(table, row, 'its device profile is not adopted')
            return
        if self._missing('attach_handles', row['attach_handle_id']) or (
                self._missing('deployables', row['deployable_id'])):
            self._reject(table, row, 'its attach handle or deployable is '
                         'not adopted')
            return
        values = {key: row[key] for key in (
            'project_id', 'state', 'device_profile_id',
            'device_profile_group_id', 'hostname', 'device_rp_uuid',
            'instance_uuid', 'attach_handle_id', 'deployable_id')}
        values['substate'] = row.get('substate') or 'Initial'
        values['nova_notified'] = row['state'] in _TOLD_NOVA
        # Every row has the same keys: one INSERT writes them all.
        values['bind_conductor'] = values['bind_started_at'] = None
        if row['state'] == states.BIND_STARTED:
            values['bind_conductor'] = ADOPTED_CONDUCTOR
            values['bind_started_at'] = (row.get('updated_at')
                                         or row.get('created_at') or self.now)
        if row.get('project_id') is None:
            self.result.notes.append(
                'extended_accelerator_requests %s: no project_id; only '
                'admins and services see it until one is set'
                % row['uuid'])
        self._keep(table, row, values)

    def hosts(self):
        names = sorted({d['hostname']
                        for d in self.adopted['devices'].values()})
        for index, name in enumerate(names, 1):
            # Synced at generation 0: Placement shows what upstream put
            # there, which ``cyborg-status upgrade check`` verifies.
            self.result.rows['hosts'].append({
                'id': index, 'hostname': name, 'status': 'up',
                'last_seen_at': self.now, 'report_generation': 0,
                'synced_generation': 0, 'sync_pending': False,
                'adopted': True,
                'created_at': self.now, 'updated_at': None})


def target_counts(connection):
    """Rows in our tables an adoption would fill."""
    return {name: connection.execute(
        sa.select(sa.func.count()).select_from(
            models.Base.metadata.tables[name])).scalar()
        for name in TARGET_TABLES}


def apply(engine, the_plan, force=False):
    """Write ``the_plan`` into our database (``engine``) in one
    transaction. Refuses a database holding rows already unless
    ``force``, which deletes them first in that same transaction, so a
    run that failed, or one to do again, leaves the database as before."""
    tables = models.Base.metadata.tables
    with engine.begin() as connection:
        # Written first, so that on SQLite the transaction takes the
        # write lock before it reads, waiting (busy timeout) while
        # another writer holds it. Had it read first, a write committed
        # meanwhile (a running conductor renews its lease every few
        # seconds) would fail its first INSERT at once with "database is
        # locked", whatever the busy timeout. A refused run rolls it back.
        connection.execute(sa.insert(tables['adoptions']), [{
            'source_revision': the_plan.revision,
            'source_release': the_plan.release,
            'counts': json.dumps(the_plan.counts(), sort_keys=True),
            'rejected': len(the_plan.rejected),
            'created_at': timeutils.utcnow()}])
        counts = {name: n for name, n in target_counts(connection).items()
                  if n}
        if counts and not force:
            raise AdoptError(
                'the cyborg database is not empty (%s); adopt fills an '
                'empty database, or replaces its contents with --force'
                % ', '.join('%s %d' % item for item in sorted(counts.items())))
        if counts:
            _empty(connection)
        for name, rows in the_plan.rows.items():
            if rows:
                connection.execute(sa.insert(tables[name]), rows)
        if connection.dialect.name == 'postgresql':
            _advance_sequences(connection, list(the_plan.rows) +
                               ['adoptions'])


def _empty(connection):
    tables = models.Base.metadata.tables
    deployables = tables['deployables']
    # Deployables may point at each other (parent, root).
    connection.execute(sa.update(deployables).values(parent_id=None,
                                                     root_id=None))
    for name in TARGET_TABLES:
        connection.execute(sa.delete(tables[name]))


def _advance_sequences(connection, names):
    """Rows inserted with their ids leave PostgreSQL's sequences behind."""
    tables = models.Base.metadata.tables
    for name in names:
        table = tables[name]
        # setval(seq, n, false): the next id the sequence gives is n.
        connection.execute(sa.select(sa.func.setval(
            sa.func.pg_get_serial_sequence(name, 'id'),
            sa.select(sa.func.coalesce(sa.func.max(table.c.id), 0) + 1)
            .scalar_subquery(), False)))


def accept_host(connection, hostname):
    """Let the reports of adopted host ``hostname`` (None: every adopted
    host) be applied even where they differ from what was adopted. The
    names of the hosts accepted."""
    hosts = models.Base.metadata.tables['hosts']
    waiting = hosts.c.adopted.is_(True)
    if hostname is not None:
        waiting = sa.and_(waiting, hosts.c.hostname == hostname)
    accept = sa.update(hosts).where(waiting).values(adopted=False)
    if connection.dialect.update_returning:
        # One statement: on SQLite a read before the write fails the
        # write at once ("database is locked") when another writer (a
        # running conductor) commits in between.
        return sorted(row[0] for row in connection.execute(
            accept.returning(hosts.c.hostname)))
    names = sorted(row[0] for row in connection.execute(
        sa.select(hosts.c.hostname).where(waiting)))
    if names:
        connection.execute(accept.where(hosts.c.hostname.in_(names)))
    return names


def latest(connection):
    """The newest adoption row, or None when nothing was adopted."""
    table = models.Base.metadata.tables['adoptions']
    row = connection.execute(sa.select(table).order_by(
        table.c.id.desc()).limit(1)).first()
    return None if row is None else row._mapping

