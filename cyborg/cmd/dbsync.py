"""cyborg-dbsync: create, upgrade and inspect the cyborg database.

Sub-commands:

``upgrade [--revision REV]``
    Run the alembic migrations up to REV (default: head).
``version``
    Print the revision the database is at, or ``None`` when it is empty.
``stamp --revision REV``
    Record REV as the current revision without running anything.
``online_data_migrations [--max-count N]``
    Run the registered online data migrations in batches. Exit 0 when
    nothing is left, 1 when ``--max-count`` stopped the run (run again), 2
    when a migration failed (see the log).
``create_schema``
    Create the tables straight from the models and stamp head; for a new,
    empty database only (tests, the all-in-one).
``adopt --from URL [--dry-run] [--force] [--leave-out]``
    Take over the database of a running OpenStack Cyborg (14.0 to
    17.0.0) at URL, keeping every uuid (``cyborg.db.adopt``). The target
    is the ``[database]`` of the configuration, at head. ``--dry-run``
    prints what would be adopted and every row that cannot be, and why;
    ``--force`` replaces what the target holds; ``--leave-out`` adopts
    although some rows cannot be. Exit 2, with one line, when the
    upstream URL is bad, its database does not answer or is of a release
    we do not read, or when the adoption cannot go on.
``adopt_accept (--host NAME | --all)``
    Let the reports of an adopted host (or of all) be applied although
    they differ from what was adopted; until then such a report is
    logged by the conductor and not applied.

Operator mistakes and unreachable databases print one line on stderr and
exit 1, not a traceback.
"""

import sys

from alembic import util as alembic_util
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging
import prettytable
import sqlalchemy as sa

from cyborg.common import context
from cyborg.common import service
from cyborg import conf as cyborg_conf
from cyborg.db import adopt
from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg.db import models

LOG = logging.getLogger(__name__)
CONF = cyborg_conf.CONF

# Online data migrations, run in this order. Each is
# ``fn(context, max_count) -> (found, done)``: it migrates at most
# ``max_count`` rows and says how many rows it found still needing the
# migration and how many it migrated. Empty until a release needs one.
ONLINE_MIGRATIONS = ()

# Rows one migration handles per call when no --max-count limits the run;
# small batches keep each transaction, and its locks, short.
BATCH_SIZE = 50


DESCRIPTION = ('Create, upgrade and inspect the cyborg database ([database] '
               'connection); run the online data migrations.')


class DBSyncError(Exception):
    """A problem the operator can fix; reported as one line."""


def do_upgrade(conf):
    migration.upgrade(conf.command.revision)
    print('Database at revision %s' % migration.version())


def do_version(conf):
    print(migration.version())


def do_stamp(conf):
    migration.stamp(conf.command.revision)
    print('Database stamped at revision %s' % migration.version())


def do_create_schema(conf):
    """Create every table from the models, then stamp head.

    Refuses a database that already has tables: the models may differ from
    what the migrations made there, and head would then be a lie.
    """
    engine = db_api.get_engine()
    tables = sa.inspect(engine).get_table_names()
    if tables:
        raise DBSyncError(
            'the database is not empty (%d tables); create_schema only '
            'fills an empty database, use "upgrade" instead' % len(tables))
    models.Base.metadata.create_all(engine)
    migration.stamp('head', engine=engine)
    print('Database created at revision %s' % migration.head())


def do_adopt(conf):
    """Adopt upstream's database (see ``cyborg.db.adopt``)."""
    args = conf.command
    revision, source = adopt.read_source(args.from_url)
    the_plan = adopt.plan(revision, source)
    if args.dry_run:
        print('\n'.join(the_plan.summary()))
        return 0
    current = migration.version()
    if current != migration.head():
        raise adopt.AdoptError(
            'the cyborg database is at revision %s, not %s: run '
            '"cyborg-dbsync upgrade" first' % (current, migration.head()))
    if the_plan.rejected and not args.leave_out:
        print('\n'.join(the_plan.summary()), file=sys.stderr)
        raise adopt.AdoptError(
            '%d row(s) cannot be adopted (listed above); nothing was '
            'written. Fix them upstream, or adopt without them with '
            '--leave-out' % len(the_plan.rejected))
    adopt.apply(db_api.get_engine(), the_plan, force=args.force)
    print('Adopted upstream Cyborg %s: %s; %d row(s) left out.' % (
        the_plan.release, ', '.join('%s %d' % item for item in
                                    the_plan.counts().items()),
        len(the_plan.rejected)))
    return 0


def do_adopt_accept(conf):
    args = conf.command
    host = args.adopted_host
    if bool(host) == bool(args.all):
        raise adopt.AdoptError('give --host NAME or --all')
    with db_api.get_engine().begin() as connection:
        names = adopt.accept_host(connection, host)
    if not names:
        raise adopt.AdoptError('no adopted host waits for its first report'
                               + (' under the name %s' % host if host
                                  else ''))
    print('Reports of %s are applied from now on.' % ', '.join(names))
    return 0


def do_online_data_migrations(conf):
    max_count = conf.command.max_count
    if max_count is not None and max_count < 1:
        raise DBSyncError('--max-count must be at least 1, not %d'
                          % max_count)
    totals, failed, limited = run_online_migrations(
        context.get_admin_context(), ONLINE_MIGRATIONS, max_count)
    print(_results_table(totals))
    if failed:
        print('Some migrations failed: %s. See the log for details.'
              % ', '.join(sorted(failed)), file=sys.stderr)
        return 2
    if limited:
        print('Stopped after --max-count rows; more may remain. Run the '
              'command again.')
        return 1
    return 0


def run_online_migrations(ctx, migrations, max_count=None):
    """Run ``migrations`` in batches until a pass migrates nothing.

    With ``max_count`` the run stops once that many rows were migrated in
    total. Returns ``(totals, failed, limited)``: ``{name: [found, done]}``,
    the names of the migrations that raised (each runs no more after that),
    and whether ``max_count`` cut the run short.
    """
    totals = {fn.__name__: [0, 0] for fn in migrations}
    failed = set()
    remaining = max_count
    while remaining is None or remaining > 0:
        done = _run_one_pass(ctx, migrations, remaining, totals, failed)
        if not done:
            return totals, failed, False
        if remaining is not None:
            remaining -= done
    return totals, failed, True


def _run_one_pass(ctx, migrations, limit, totals, failed):
    """Give each migration one batch; return the rows migrated in all."""
    migrated = 0
    for fn in migrations:
        name = fn.__name__
        batch = BATCH_SIZE if limit is None else limit - migrated
        if name in failed or batch <= 0:
            continue
        try:
            found, done = fn(ctx, min(batch, BATCH_SIZE))
        except Exception:
            LOG.exception('Online data migration %s failed', name)
            failed.add(name)
            continue
        totals[name][0] += found
        totals[name][1] += done
        migrated += done
    return migrated


def _results_table(totals):
    table = prettytable.PrettyTable(['Migration', 'Total Needed', 'Completed'])
    table.align['Migration'] = 'l'
    for name, (found, done) in totals.items():
        table.add_row([name, found, done])
    return table


def add_command_parsers(subparsers):
    """Declare the sub-commands and their arguments for oslo.config."""
    subparsers.required = True
    parser = subparsers.add_parser(
        'upgrade', help='Upgrade the schema (default: to head).')
    parser.add_argument('--revision', default='head',
                        help='Revision to upgrade to.')
    parser.set_defaults(func=do_upgrade)
    parser = subparsers.add_parser(
        'version', help='Print the current revision ("None" if empty).')
    parser.set_defaults(func=do_version)
    parser = subparsers.add_parser(
        'stamp', help='Mark the database as being at a revision.')
    parser.add_argument('--revision', required=True,
                        help='Revision to record.')
    parser.set_defaults(func=do_stamp)
    parser = subparsers.add_parser(
        'online_data_migrations', help='Run the online data migrations.')
    parser.add_argument('--max-count', type=int, metavar='N',
                        help='Migrate at most N rows in this run.')
    parser.set_defaults(func=do_online_data_migrations)
    parser = subparsers.add_parser(
        'create_schema', help='Create the tables of an empty database from '
                              'the models and stamp head.')
    parser.set_defaults(func=do_create_schema)
    parser = subparsers.add_parser(
        'adopt', help='Take over the database of a running OpenStack '
                      'Cyborg, keeping every uuid.')
    parser.add_argument('--from', dest='from_url', required=True,
                        metavar='URL',
                        help="Upstream Cyborg's database URL "
                             '(its [database] connection).')
    parser.add_argument('--dry-run', action='store_true',
                        help='Print what would be adopted; write nothing.')
    parser.add_argument('--force', action='store_true',
                        help='Replace what the cyborg database holds.')
    parser.add_argument('--leave-out', action='store_true',
                        help='Adopt although some rows cannot be.')
    parser.set_defaults(func=do_adopt)
    parser = subparsers.add_parser(
        'adopt_accept', help="Apply an adopted host's reports although "
                             'they differ from what was adopted.')
    parser.add_argument('--host', dest='adopted_host', metavar='NAME',
                        help='The host (as its devices name it).')
    parser.add_argument('--all', action='store_true',
                        help='Every adopted host.')
    parser.set_defaults(func=do_adopt_accept)


command_opt = cfg.SubCommandOpt(
    'command', title='Commands', handler=add_command_parsers,
    help='Available commands')

# What an operator can fix, so a line on stderr says it better than a
# traceback: bad revisions, our own refusals, unreachable databases.
_OPERATOR_ERRORS = (DBSyncError, alembic_util.CommandError,
                    db_exc.DBError, sa.exc.SQLAlchemyError)


def run(conf):
    """Run the parsed sub-command of ``conf``; return the exit code."""
    try:
        db_api.configure(conf)
        return conf.command.func(conf) or 0
    except adopt.AdoptError as e:
        print('cyborg-dbsync: error: %s' % e, file=sys.stderr)
        return 2
    except _OPERATOR_ERRORS as e:
        print('cyborg-dbsync: error: %s' % error_line(e), file=sys.stderr)
        return 1


def error_line(error):
    """The first line of an error: SQLAlchemy appends a help link below."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def main(argv=None):
    # alembic's INFO lines would mix with the results printed on stdout.
    logging.set_defaults(
        default_log_levels=logging.get_default_log_levels() + ['alembic=WARN'])
    CONF.register_cli_opt(command_opt)
    service.prepare_service(argv, CONF, prog='cyborg-dbsync',
                            description=DESCRIPTION)
    return run(CONF)


if __name__ == '__main__':
    sys.exit(main())
