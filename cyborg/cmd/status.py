"""cyborg-status: checks an operator runs before restarting on new code.

``cyborg-status upgrade check`` prints a table of results and exits with
the worst code: 0 success, 1 warning, 2 failure (255 if a check crashed).
The checks read the database with plain SQL through alembic, never through
objects, so they work on a database the previous release left behind.

``cyborg-status keys {create,rotate,retire,broker} ...`` makes the RPC
keys and prints the broker users' commands: a module of its own,
:mod:`cyborg.cmd.keys`, whose commands this one reads the configuration
for.
"""

import importlib.metadata
import itertools
import json
import sys

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_policy import opts as policy_opts
from oslo_upgradecheck import common_checks
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from cyborg.cmd import dbsync
from cyborg.cmd import keys as keys_cmd
from cyborg.common import config_check
from cyborg.common.clients import placement as placement_client
from cyborg.common import exception
from cyborg.common import hostnames
from cyborg.common import keys
from cyborg.common import rpc
from cyborg import conf as cyborg_conf
from cyborg.db import adopt
from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg.db import models
from cyborg import version

CONF = cyborg_conf.CONF

PROG = 'cyborg-status'
DESCRIPTION = ('Check that this deployment is ready for the installed '
               'cyborg ("upgrade check"): database schema, configuration, '
               'drivers, Placement, adoption, RPC keys; make the keys that '
               'sign RPC messages ("keys create", "keys rotate", "keys '
               'retire") and print the broker users\' commands ("keys '
               'broker"). "cyborg-status keys --help" lists the keys\' '
               'commands, "cyborg-status keys COMMAND --help" the options '
               'of each. --config-file and --config-dir come before or '
               'after the command.')

DRIVER_NAMESPACE = 'cyborg.accelerator.driver'

_UPGRADE_HINT = 'Run "cyborg-dbsync upgrade".'

# The newest Placement microversion cyborg's code asks for; a test keeps it
# in step with cyborg.common.clients.placement.
PLACEMENT_MIN_VERSION = (1, 26)


def _result(code, details=None):
    return upgradecheck.Result(code, details)


def _installed_drivers():
    """Names of the accelerator drivers installed as entry points."""
    return {ep.name for ep in
            importlib.metadata.entry_points(group=DRIVER_NAMESPACE)}


class Checks(upgradecheck.UpgradeCommands):
    """cyborg's upgrade checks; each returns an ``upgradecheck.Result``."""

    def __init__(self, conf=CONF):
        self.conf = conf

    def _check_database_schema(self):
        """The schema must be at the head this release's code expects."""
        try:
            db_api.configure(self.conf)
            current = migration.version()
        except (db_exc.DBError, sa.exc.SQLAlchemyError) as e:
            return _result(upgradecheck.Code.FAILURE,
                           'Cannot read the database: %s'
                           % dbsync.error_line(e))
        head = migration.head()
        if current == head:
            return _result(upgradecheck.Code.SUCCESS)
        if current is None:
            return _result(upgradecheck.Code.FAILURE,
                           'The database has no cyborg schema. '
                           + _UPGRADE_HINT)
        return _result(upgradecheck.Code.FAILURE,
                       'The database schema is at revision %s, this '
                       'release needs %s. %s' % (current, head, _UPGRADE_HINT))

    def _check_policy_file(self):
        """A JSON policy file is deprecated by oslo.policy."""
        return common_checks.check_policy_json(self, self.conf)

    def _check_enabled_drivers(self):
        """An agent fails to load a driver that is not installed."""
        missing = sorted(set(self.conf.agent.enabled_drivers)
                         - _installed_drivers())
        if not missing:
            return _result(upgradecheck.Code.SUCCESS)
        return _result(
            upgradecheck.Code.WARNING,
            '[agent] enabled_drivers names drivers that are not installed: '
            '%s. Installed drivers: %s.'
            % (', '.join(missing), ', '.join(sorted(_installed_drivers()))
               or 'none'))

    def _check_placement(self):
        """Placement must answer, with a new enough microversion."""
        try:
            client = placement_client.connect(self.conf)
            response = client.get('/', raise_exc=False)
        except Exception as e:  # keystoneauth's many connection errors
            return _result(upgradecheck.Code.FAILURE,
                           'Placement cannot be reached with the [placement] '
                           'options: %s' % dbsync.error_line(e))
        if response.status_code != 200:
            return _result(upgradecheck.Code.FAILURE,
                           'Placement answered %s to its version document.'
                           % response.status_code)
        return _placement_version_result(response.json())

    def _check_adoption(self):
        """After ``cyborg-dbsync adopt``: was everything adopted, have
        the agents confirmed their hosts, and does Placement show every
        deployable as upstream left it?"""
        try:
            db_api.configure(self.conf)
            with db_api.get_engine().connect() as connection:
                if not sa.inspect(connection).has_table('adoptions'):
                    return _result(upgradecheck.Code.SUCCESS)
                record = adopt.latest(connection)
                if record is None:
                    return _result(upgradecheck.Code.SUCCESS)
                unconfirmed, providers = _adopted_state(connection)
        except (db_exc.DBError, sa.exc.SQLAlchemyError) as e:
            return _result(upgradecheck.Code.FAILURE,
                           'Cannot read the database: %s'
                           % dbsync.error_line(e))
        try:
            client = placement_client.connect(self.conf)
            missing = [problem for provider in providers
                       for problem in _placement_problems(client, provider)]
        except Exception as e:  # keystoneauth's many connection errors
            return _result(upgradecheck.Code.FAILURE,
                           'Cannot compare the adoption with Placement: %s'
                           % dbsync.error_line(e))
        return _adoption_result(record, unconfirmed, missing)

    def _check_configuration(self):
        """Bad values fail; options no library knows are warned about."""
        problems = config_check.bad_values(self.conf)
        if problems:
            return _result(upgradecheck.Code.FAILURE, '; '.join(problems))
        unknown = config_check.unknown_options(self.conf)
        if unknown:
            return _result(
                upgradecheck.Code.WARNING,
                'The configuration files set options that cyborg does not '
                'know (a misspelling?); they are ignored: %s'
                % config_check.describe_unknown(unknown))
        return _result(upgradecheck.Code.SUCCESS)

    def _check_rpc_keys(self):
        """RPC messages are signed: the API's key must be in key_dir,
        and unsigned messages accepted only while upgrading."""
        required = self.conf.security.require_signed
        try:
            keys.KeyStore(self.conf.security.key_dir).keys(keys.API)
        except exception.RPCKeyMissing as e:
            return _result(
                upgradecheck.Code.FAILURE if required
                else upgradecheck.Code.WARNING,
                '%s. Make the keys with "cyborg-status keys create --api '
                '--host <each compute host>" (see the security guide).' % e)
        if not required:
            return _result(
                upgradecheck.Code.WARNING,
                '[security] require_signed is False: unsigned RPC messages '
                'are accepted. Set it to True once every service signs.')
        return _result(upgradecheck.Code.SUCCESS)

    def _check_compute_node_names(self):
        """Each agent's host must be found in Placement by one of its
        names (``[DEFAULT] host``, ``[agent] resource_provider_name``),
        as the compute node provider Nova made: else its devices are
        never offered, and Nova's binds name a host cyborg may refuse."""
        try:
            db_api.configure(self.conf)
            with db_api.get_engine().connect() as connection:
                hosts = self._host_names(connection)
        except (db_exc.DBError, sa.exc.SQLAlchemyError) as e:
            return _result(upgradecheck.Code.FAILURE,
                           'Cannot read the database: %s'
                           % dbsync.error_line(e))
        if not hosts:
            return _result(upgradecheck.Code.SUCCESS)
        try:
            client = placement_client.connect(self.conf)
            unmatched = self._unmatched_hosts(client, hosts)
        except Exception as e:  # keystoneauth's many connection errors
            return _result(upgradecheck.Code.FAILURE,
                           'Cannot compare the hosts with Placement: %s'
                           % dbsync.error_line(e))
        if not unmatched:
            return _result(upgradecheck.Code.SUCCESS)
        shown = unmatched[:_PROBLEMS_SHOWN]
        more = len(unmatched) - len(shown)
        return _result(
            upgradecheck.Code.WARNING,
            'No compute node provider in Placement has a name of these '
            'hosts\' agents, so their devices are not offered and binds '
            'may be refused: %s%s. Set [agent] resource_provider_name of '
            'each agent to the hypervisor host name of its nova-compute '
            '(openstack hypervisor list); see the install guide.' % (
                '; '.join(shown),
                ' and %d more' % more if more else ''))

    @staticmethod
    def _host_names(connection):
        """{hostname: its names (``host_names``)} of the agents' hosts;
        empty before there is a hosts table."""
        inspector = sa.inspect(connection)
        if not inspector.has_table('hosts'):
            return {}
        table = models.Host.__table__
        columns = [table.c.hostname]
        if 'resource_provider_name' in {
                c['name'] for c in inspector.get_columns('hosts')}:
            columns.append(table.c.resource_provider_name)
        return {row[0]: hostnames.host_names(
                    row[0], row[1] if len(row) > 1 else None)
                for row in connection.execute(
                    sa.select(*columns).order_by(table.c.hostname))}

    @staticmethod
    def _unmatched_hosts(client, hosts):
        """What is wrong with each host of ``hosts`` ({hostname: names})
        none of whose names is a provider's in Placement, with the
        compute node (trait COMPUTE_NODE, one listing) it likely meant
        where one is named by another form of its names."""
        response = client.get('/resource_providers?required=COMPUTE_NODE',
                              microversion='1.18', raise_exc=False)
        nodes = set()
        if response.status_code == 200:
            nodes = {p['name'] for p in response.json()[
                'resource_providers']}
        problems = []
        for hostname, names in hosts.items():
            if nodes.intersection(names) or any(
                    placement_client.find_provider(client, name)
                    for name in names):
                continue
            likely = sorted(node for node in nodes if any(
                hostnames.same_host_name(node, name) for name in names))
            problems.append('%s (names %s)%s' % (
                hostname, ', '.join(names),
                ', Placement has compute node %s' % ' or '.join(likely)
                if likely else ''))
        return problems

    _upgrade_checks = (
        ('Configuration', _check_configuration),
        ('Database schema', _check_database_schema),
        ('Policy File JSON to YAML Migration', _check_policy_file),
        ('Enabled accelerator drivers', _check_enabled_drivers),
        ('Placement API', _check_placement),
        ('Adoption of upstream Cyborg', _check_adoption),
        ('Compute node names', _check_compute_node_names),
        ('RPC keys', _check_rpc_keys),
    )


#: Placement problems listed at most, the rest counted.
_PROBLEMS_SHOWN = 5


def _adopted_state(connection):
    """(hosts not yet confirmed by a report, [(deployable name, rp uuid,
    compute node names, resource class, total)] of every deployable)."""
    hosts = models.Host.__table__
    unconfirmed = sorted(row[0] for row in connection.execute(
        sa.select(hosts.c.hostname).where(hosts.c.adopted.is_(True))))
    deployables = models.Deployable.__table__
    devices = models.Device.__table__
    attributes = models.Attribute.__table__
    rows = connection.execute(
        sa.select(deployables.c.name, deployables.c.rp_uuid,
                  deployables.c.num_accelerators, devices.c.hostname,
                  hosts.c.resource_provider_name, attributes.c.value)
        .join(devices, devices.c.id == deployables.c.device_id)
        .outerjoin(hosts, hosts.c.hostname == devices.c.hostname)
        .outerjoin(attributes, sa.and_(
            attributes.c.deployable_id == deployables.c.id,
            attributes.c.key == 'rc'))
        .order_by(deployables.c.name))
    return unconfirmed, [
        (name, rp_uuid, [n for n in (rp_name, hostname) if n], rc, total)
        for name, rp_uuid, total, hostname, rp_name, rc in rows]


def _placement_problems(client, provider):
    """What Placement shows otherwise than the database for one
    deployable's provider (see ``_adopted_state``)."""
    name, rp_uuid, names, rc, total = provider
    if rc is None:
        # Never reported to Placement, by upstream or by us.
        return []
    found = placement_client.get_provider(client, rp_uuid) if rp_uuid else (
        None)
    if found is None:
        return ['%s: no provider %s' % (name, rp_uuid)]
    problems = []
    roots = [placement_client.find_provider(client, n) for n in names]
    if found.get('parent_provider_uuid') not in [r['uuid'] for r in roots
                                                 if r]:
        problems.append('%s: provider %s is not under compute node %s'
                        % (name, rp_uuid, ' or '.join(names)))
    url = '/resource_providers/%s/inventories' % rp_uuid
    response = client.get(url, microversion='1.26', raise_exc=False)
    inventory = (response.json().get('inventories', {}).get(rc)
                 if response.status_code == 200 else None)
    if not inventory or inventory.get('total') != total:
        problems.append('%s: Placement has %s of %s, the database %d'
                        % (name, inventory and inventory.get('total'), rc,
                           total))
    return problems


def _adoption_result(record, unconfirmed, problems):
    counts = json.loads(record['counts'])
    summary = 'Adopted from upstream Cyborg %s: %s.' % (
        record['source_release'], ', '.join(
            '%s %d' % item for item in sorted(counts.items())))
    if problems:
        shown = problems[:_PROBLEMS_SHOWN]
        if len(problems) > len(shown):
            shown.append('and %d more' % (len(problems) - len(shown)))
        return _result(upgradecheck.Code.FAILURE,
                       '%s Placement does not show the adopted deployables '
                       'as the database does: %s.'
                       % (summary, '; '.join(shown)))
    notes = []
    if record['rejected']:
        notes.append('%d row(s) were left out (--leave-out)'
                     % record['rejected'])
    if unconfirmed:
        notes.append('hosts not yet confirmed by a report of their cyborg '
                     'agent: %s (start their agents; a report that differs '
                     'from upstream is logged by the conductor and waits '
                     'for "cyborg-dbsync adopt_accept")'
                     % ', '.join(unconfirmed))
    if notes:
        return _result(upgradecheck.Code.WARNING,
                       '%s %s.' % (summary, '; '.join(notes)))
    return _result(upgradecheck.Code.SUCCESS, summary)


def _placement_version_result(document):
    """SUCCESS when the version document offers PLACEMENT_MIN_VERSION."""
    try:
        newest = max(tuple(int(n) for n in v['max_version'].split('.'))
                     for v in document['versions'])
    except (KeyError, TypeError, ValueError):
        return _result(upgradecheck.Code.FAILURE,
                       'Placement returned an unexpected version document.')
    wanted = '%d.%d' % PLACEMENT_MIN_VERSION
    if newest < PLACEMENT_MIN_VERSION:
        return _result(upgradecheck.Code.FAILURE,
                       'Placement offers microversions up to %d.%d; cyborg '
                       'needs %s. Upgrade Placement first.'
                       % (newest + (wanted,)))
    return _result(upgradecheck.Code.SUCCESS)


#: The options of the configuration, taken before or after the command.
CONFIG_OPTIONS = ('--config-file', '--config-dir')


def _add_upgrade_parser(subparsers):
    # As oslo.upgradecheck's own, with help.
    parser = subparsers.add_parser(
        'upgrade', help='"upgrade check": check the deployment before '
        'restarting on new code (database schema, configuration, drivers, '
        'Placement, adoption, RPC keys)')
    parser.add_argument('check', choices=('check',),
                        help='run the checks; exit status 0 success, '
                        '1 warning, 2 failure')
    parser.add_argument('--json', action='store_true',
                        help='the results as JSON instead of a table')
    parser.set_defaults(action_fn=Checks(CONF).check)


def _add_commands(subparsers):
    _add_upgrade_parser(subparsers)
    keys_cmd.add_parser(subparsers, CONF)


COMMAND = cfg.SubCommandOpt('command', title='commands',
                            handler=_add_commands)


def _config_options_first(argv):
    """``argv`` with the configuration options (CONFIG_OPTIONS) moved
    before the command, where oslo.config reads them."""
    head, tail = [], []
    words = iter(argv)
    for word in words:
        if word.split('=', 1)[0] in CONFIG_OPTIONS:
            head.append(word)
            if '=' not in word:
                head.extend(itertools.islice(words, 1))
        elif tail or not word.startswith('-'):
            tail.append(word)
        else:
            head.append(word)
    return head + tail


def main(argv=None):
    """``cyborg-status upgrade check`` (``upgradecheck``'s table or JSON)
    or ``cyborg-status keys ...``, with the configuration errors of every
    cyborg command: one line on stderr and exit status 2. The
    configuration options may come before or after the command."""
    argv = sys.argv[1:] if argv is None else argv
    policy_opts.set_defaults(CONF)
    rpc.set_defaults()
    rpc.register_opts(CONF)
    # The command line is this command's alone, also when main runs
    # again in one process (the tests): the commands are registered for
    # this run only.
    CONF.clear()
    CONF.register_cli_opt(COMMAND)
    try:
        config_check.parse(CONF, _config_options_first(argv),
                           project='cyborg', prog=PROG,
                           version=version.version_string(),
                           description=DESCRIPTION)
        # oslo.upgradecheck reads --json from its own CONF.
        upgradecheck.CONF = CONF
        return upgradecheck.run(CONF)
    except config_check.ConfigError as e:
        print('%s: error: %s' % (PROG, e), file=sys.stderr)
        return config_check.EXIT_STATUS
    finally:
        CONF.clear()
        CONF.unregister_opt(COMMAND)


if __name__ == '__main__':
    sys.exit(main())
