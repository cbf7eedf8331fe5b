"""Adoption of real upstream Cyborg databases (issue 27).

For OpenStack Cyborg 17.0.0 and 14.1.0, on MariaDB and PostgreSQL: the
upstream database gets its schema from upstream's own ``cyborg-dbsync``
and its rows from upstream's own conductor and ARQ code
(``upstream_fill.py``: devices by its report path, ARQs by its binds and
unbinds, in every state), once per
release and server for the whole module (``cyborg.tests.functional.
upstream``); each test adopts it into a fresh cyborg database and checks,
uuid by uuid, that our API names the same things, that Nova's calls
for the adopted servers work, and that the first report of our agent on
an unchanged host writes nothing to a Placement that shows upstream's
providers. ``UpstreamFakeDriverTest`` checks that our fake driver can
report its card as upstream's fake driver does (``[fake_driver]
report_as``), which the end-to-end take-over with the real Nova relies
on (``cyborg/tests/e2e/test_adopt_upstream.py``).
"""

import copy
import datetime
import json
import logging
import os
import subprocess
import sys

import fixtures

from keystoneauth1 import loading as ks_loading
from oslo_upgradecheck import upgradecheck

from cyborg.accelerator.drivers.fake import driver as fake_driver
from cyborg.agent import reporter as agent_reporter
from cyborg.cmd import status
from cyborg.common import context as cyborg_context
from cyborg.common.clients import placement as placement_client
from cyborg.conductor import reporting
from cyborg.db import adopt
from cyborg.db import api as db_api
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.objects import driver_device as dd
from cyborg.tests.functional.api import base
from cyborg.tests.functional import nova as stand_in_nova
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional import upstream
from cyborg.tests import services

_DATABASES = upstream.Databases()


def tearDownModule():
    _DATABASES.drop_all()


class _AdoptionTests:
    """Run by the classes at the end, one per release and server."""

    release = None
    # Where upstream's database is; ``backend`` is cyborg's.
    upstream_backend = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if cls.release is not None:
            _DATABASES.make(cls.release,
                            cls.upstream_backend or cls.backend)

    def setUp(self):
        super().setUp()
        self.upstream = _DATABASES.get(
            self, self.release, self.upstream_backend or self.backend)
        # The module's: a test that changes it changes a copy.
        self.written = copy.deepcopy(self.upstream.written)

    def adopt(self, **kwargs):
        revision, source = adopt.read_source(self.upstream.url)
        the_plan = adopt.plan(revision, source)
        adopt.apply(self.db.engine, the_plan, **kwargs)
        return the_plan

    def _all(self, path, key, **kwargs):
        response = self.get(path, **kwargs)
        self.assertEqual(200, response.status_int, response.body)
        return {item['uuid']: item for item in response.json[key]}

    def test_plan_adopts_every_row(self):
        the_plan = self.adopt()
        self.assertEqual([], the_plan.rejected)
        self.assertEqual({'device_profiles': 2, 'devices': 3,
                          'controlpath_ids': 3, 'deployables': 3,
                          'attributes': 9, 'attach_handles': 5,
                          'extended_accelerator_requests': 6, 'hosts': 2},
                         the_plan.counts())

    def test_devices_deployables_and_attributes_keep_their_uuids(self):
        self.adopt()
        devices = self._all('/v2/devices', 'devices')
        deployables = self._all('/v2/deployables', 'deployables')
        attributes = self._all('/v2/attributes', 'attributes')
        self.assertEqual({d['uuid'] for d in self.written['devices']},
                         set(devices))
        for device in self.written['devices']:
            ours = devices[device['uuid']]
            self.assertEqual((device['hostname'], device['type']),
                             (ours['hostname'], ours['type']))
            wanted = device['deployable']
            deployable = deployables[wanted['uuid']]
            self.assertEqual(
                (wanted['name'], wanted['rp_uuid'],
                 wanted['num_accelerators']),
                (deployable['name'], deployable['rp_uuid'],
                 deployable['num_accelerators']))
            for key, (attribute_uuid, value) in device['attributes'].items():
                self.assertEqual(
                    (wanted['id'], key, value),
                    tuple(attributes[attribute_uuid][k] for k in (
                        'deployable_id', 'key', 'value')))

    def test_control_path_ids_and_handles_keep_their_uuids(self):
        self.adopt()
        with self.db.engine.connect() as connection:
            cpids = dict(connection.execute(
                models.ControlpathID.__table__.select().with_only_columns(
                    models.ControlpathID.uuid, models.ControlpathID.cpid_info)
            ).all())
            handles = dict(connection.execute(
                models.AttachHandle.__table__.select().with_only_columns(
                    models.AttachHandle.uuid, models.AttachHandle.in_use)
            ).all())
        self.assertEqual({d['cpid']: d['cpid_info']
                          for d in self.written['devices']}, cpids)
        bound = {arq['attach_handle_id'] for arq in self.written['arqs']}
        self.assertEqual(
            {handle_uuid: handle_id in bound
             for device in self.written['devices']
             for handle_id, handle_uuid in device['handles']}, handles)

    def test_device_profiles_keep_uuid_name_groups_and_description(self):
        self.adopt()
        profiles = self._all('/v2/device_profiles', 'device_profiles')
        self.assertEqual(
            {p['uuid']: (name, p['description'], p['groups'])
             for name, p in self.written['profiles'].items()},
            {u: (p['name'], p['description'], p['groups'])
             for u, p in profiles.items()})

    def test_every_arq_in_every_state(self):
        self.adopt()
        arqs = self._all('/v2/accelerator_requests', 'arqs')
        fields = ('state', 'hostname', 'device_rp_uuid', 'instance_uuid',
                  'project_id')
        self.assertEqual(
            {a['uuid']: tuple(a[f] for f in fields)
             for a in self.written['arqs']},
            {u: tuple(a[f] for f in fields) for u, a in arqs.items()})
        handles = {handle_id: handle_uuid
                   for device in self.written['devices']
                   for handle_id, handle_uuid in device['handles']}
        bound = [a for a in self.written['arqs'] if a['state'] == 'Bound']
        self.assertEqual(handles[bound[0]['attach_handle_id']],
                         arqs[bound[0]['uuid']]['attach_handle_uuid'])
        self.assertEqual('PCI', arqs[bound[0]['uuid']]['attach_handle_type'])

    def test_nova_finds_and_deletes_the_arqs_of_an_adopted_server(self):
        self.adopt()
        bound = [a for a in self.written['arqs'] if a['state'] == 'Bound'][0]
        nova = dict(base.NOVA)
        found = self.get('/v2/accelerator_requests', headers=nova,
                         service=True, instance=bound['instance_uuid'],
                         bind_state='resolved')
        self.assertEqual(200, found.status_int, found.body)
        self.assertEqual([bound['uuid']],
                         [a['uuid'] for a in found.json['arqs']])
        deleted = self.delete('/v2/accelerator_requests', headers=nova,
                              service=True, instance=bound['instance_uuid'])
        self.assertEqual(204, deleted.status_int, deleted.body)
        self.assertEqual([], self.get(
            '/v2/accelerator_requests', headers=nova, service=True,
            instance=bound['instance_uuid']).json['arqs'])
        with self.db.engine.connect() as connection:
            in_use = connection.execute(
                models.AttachHandle.__table__.select().with_only_columns(
                    models.AttachHandle.in_use).where(
                    models.AttachHandle.id == bound['attach_handle_id'])
            ).scalar()
        self.assertFalse(in_use)

    def stand_in_nova(self):
        """A Nova that records the events cyborg's conductor sends."""
        events = stand_in_nova.StandInNova().start(self)
        self.conf.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group='nova')
        self.flags(group='nova', **events.config())
        return events

    def test_an_unfinished_bind_fails_and_only_its_server_hears(self):
        """The bind upstream left BindStarted fails once the bind timeout
        has passed; Nova gets its event and no other."""
        self.adopt()
        events = self.stand_in_nova()
        self.useFixture(fixtures.MockPatch(
            'cyborg.conductor.binding.BIND_TIMEOUT',
            datetime.timedelta(seconds=-60)))
        self.conductor.binding.check()
        self.assertTrue(self.conductor.binding.events.wait_idle(30))
        started = [a for a in self.written['arqs']
                   if a['state'] == 'BindStarted'][0]
        self.assertEqual('BindFailed', self.get(
            '/v2/accelerator_requests/%s' % started['uuid']).json['state'])
        self.assertEqual(
            [(started['instance_uuid'], started['uuid'], 'failed')],
            [(e['server_uuid'], e['tag'], e['status'])
             for e in events.wait_events(started['instance_uuid'], 1)])
        self.assertEqual(1, len(events.events))

    def test_a_new_server_binds_an_adopted_free_handle(self):
        """Nova boots a server on adopted hardware: a new ARQ of an
        adopted profile binds to the adopted GPU's free handle."""
        self.adopt()
        self.stand_in_nova()
        created = self.post('/v2/accelerator_requests',
                            {'device_profile_name': 'gpu-dp'},
                            headers=base.MEMBER)
        self.assertEqual(201, created.status_int, created.body)
        arq = created.json['arqs'][0]
        gpu = self.written['devices'][0]
        instance = '6f1c8e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b'
        bound = self.patch('/v2/accelerator_requests', {arq['uuid']: [
            # Nova names the host as its agent does; a bind naming
            # another host is refused.
            {'op': 'add', 'path': '/hostname', 'value': gpu['hostname']},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': gpu['deployable']['rp_uuid']},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]},
            headers=base.MEMBER, service=True)
        self.assertEqual(202, bound.status_int, bound.body)
        shown = self.get('/v2/accelerator_requests/%s' % arq['uuid']).json
        self.assertEqual(('Bound', gpu['handles'][0][1]),
                         (shown['state'], shown['attach_handle_uuid']))

    def test_new_rows_get_new_ids_after_the_adopted_ones(self):
        self.adopt()
        created = self.post('/v2/device_profiles', [{
            'name': 'after-adoption',
            'groups': [{'resources:FPGA': '1'}]}])
        self.assertEqual(201, created.status_int, created.body)
        with self.db.engine.connect() as connection:
            ids = dict(connection.execute(
                models.DeviceProfile.__table__.select().with_only_columns(
                    models.DeviceProfile.name, models.DeviceProfile.id)
            ).all())
        self.assertGreater(ids['after-adoption'],
                           max(p['id'] for p in
                               self.written['profiles'].values()))

    def test_a_second_run_is_refused_then_replaces_with_force(self):
        self.adopt()
        self.assertRaisesRegex(adopt.AdoptError, 'not empty', self.adopt)
        self.adopt(force=True)
        with self.db.engine.connect() as connection:
            counts = adopt.target_counts(connection)
            record = adopt.latest(connection)
            adoptions = connection.execute(
                models.Adoption.__table__.select()).all()
        self.assertEqual(3, counts['devices'])
        self.assertEqual(2, len(adoptions))
        self.assertEqual(upstream_revision(self.release),
                         record['source_revision'])
        self.assertEqual(3, json.loads(record['counts'])['devices'])

    def test_first_report_of_an_unchanged_host_writes_nothing(self):
        """Zero churn: Placement shows upstream's providers; our agent
        reports the hardware upstream's agent reported; no Placement
        write, no provider generation moves, the report is accepted."""
        self.adopt()
        placement = self.useFixture(placement_fixture.Placement(self.conf))
        roots = upstream_providers(placement, self.written['devices'])
        before = tree_generations(placement, roots)
        placement.requests()
        ctx = cyborg_context.get_admin_context()
        for hostname in sorted(roots):
            devices = reported_devices(self.written['devices'], hostname)
            digest = agent_reporter.report_hash(devices)
            self.assertEqual(digest, reporting.Reporting(self.conf).report(
                ctx, hostname, devices, digest))
            self.assertEqual(digest, db_hosts.get_report_state(
                ctx, hostname).report_hash)
        self.assertEqual([], [r for r in placement.requests()
                              if r[0] != 'GET'])
        self.assertEqual(before, tree_generations(placement, roots))

    def test_adopted_hosts_go_down_only_after_their_agent_said_hello(self):
        self.adopt()
        ctx = cyborg_context.get_admin_context()
        self.assertEqual([], db_hosts.mark_silent_hosts_down(ctx, 0))
        db_hosts.record_hello(ctx, 'compute-b.example.org', 'compute-b',
                              '1', [])
        self.assertEqual(['compute-b.example.org'],
                         db_hosts.mark_silent_hosts_down(ctx, -1))

    def test_a_host_seen_otherwise_is_reported_not_rewritten(self):
        """Our driver names a trait of the FPGA otherwise: the report is
        refused (logged), rows and Placement stay; once the operator
        accepts the host, the report is applied and Placement follows."""
        self.adopt()
        placement = self.useFixture(placement_fixture.Placement(self.conf))
        roots = upstream_providers(placement, self.written['devices'])
        before = tree_generations(placement, roots)
        fpga = self.written['devices'][1]
        fpga['attributes']['trait1'][1] = 'CUSTOM_FPGA_INTEL_ARRIA10_GX'
        devices = reported_devices(self.written['devices'],
                                   fpga['hostname'])
        digest = agent_reporter.report_hash(devices)
        ctx = cyborg_context.get_admin_context()
        log = self.useFixture(fixtures.FakeLogger(
            name='cyborg.conductor.reporting', level=logging.WARNING))
        placement.requests()
        self.assertIsNone(reporting.Reporting(self.conf).report(
            ctx, fpga['hostname'], devices, digest))
        self.assertEqual([], [r for r in placement.requests()
                              if r[0] != 'GET'])
        self.assertEqual(before, tree_generations(placement, roots))
        attributes = self._all('/v2/attributes', 'attributes')
        self.assertEqual('CUSTOM_FPGA_INTEL_ARRIA10',
                         attributes[fpga['attributes']['trait1'][0]]['value'])
        self.assertIn('reports its devices otherwise than upstream',
                      log.output)

        with self.db.engine.begin() as connection:
            self.assertEqual([fpga['hostname']], adopt.accept_host(
                connection, fpga['hostname']))
        self.assertEqual(digest, reporting.Reporting(self.conf).report(
            ctx, fpga['hostname'], devices, digest))
        self.assertIn('CUSTOM_FPGA_INTEL_ARRIA10_GX', placement_client
                      .get_traits(placement.client,
                                  fpga['deployable']['rp_uuid'])[0])

    def test_a_device_at_another_control_path_is_refused_not_an_error(self):
        """Our driver writes the FPGA's control path otherwise (and so
        its handles), while two of its handles are in use by upstream's
        ARQs: the report is refused and logged, nothing changes."""
        self.adopt()
        fpga = self.written['devices'][1]
        compact = {'separators': (',', ':')}
        fpga['cpid_info'] = json.dumps(json.loads(fpga['cpid_info']),
                                       **compact)
        fpga['attach_infos'] = [json.dumps(json.loads(info), **compact)
                                for info in fpga['attach_infos']]
        devices = reported_devices(self.written['devices'],
                                   fpga['hostname'])
        log = self.useFixture(fixtures.FakeLogger(
            name='cyborg.conductor.reporting', level=logging.WARNING))
        ctx = cyborg_context.get_admin_context()
        self.assertIsNone(reporting.Reporting(self.conf).report(
            ctx, fpga['hostname'], devices,
            agent_reporter.report_hash(devices)))
        self.assertIn('reports its devices otherwise than upstream',
                      log.output)
        with self.db.engine.connect() as connection:
            cpids = dict(connection.execute(
                models.ControlpathID.__table__.select().with_only_columns(
                    models.ControlpathID.uuid, models.ControlpathID.cpid_info)
            ).all())
        self.assertEqual({d['cpid']: d['cpid_info']
                          for d in self.upstream.written['devices']}, cpids)

    def test_upgrade_check_follows_the_adoption(self):
        # The fixture points the engine at its database already.
        self.useFixture(fixtures.MockPatchObject(db_api, 'configure'))
        checks = status.Checks(self.conf)
        placement = self.useFixture(placement_fixture.Placement(self.conf))
        self.assertEqual(upgradecheck.Code.SUCCESS,
                         checks._check_adoption().code)
        self.adopt()
        roots = upstream_providers(placement, self.written['devices'])
        result = checks._check_adoption()
        self.assertEqual(upgradecheck.Code.WARNING, result.code)
        release = adopt.KNOWN_REVISIONS[upstream_revision(self.release)]
        self.assertIn('Adopted from upstream Cyborg %s:' % release,
                      result.details)
        self.assertIn('not yet confirmed by a report of their cyborg agent: '
                      '%s' % ', '.join(sorted(roots)), result.details)

        ctx = cyborg_context.get_admin_context()
        for hostname in roots:
            devices = reported_devices(self.written['devices'], hostname)
            digest = agent_reporter.report_hash(devices)
            reporting.Reporting(self.conf).report(ctx, hostname, devices,
                                                  digest)
        self.assertEqual(upgradecheck.Code.SUCCESS,
                         checks._check_adoption().code)

        gpu = self.written['devices'][0]['deployable']
        provider = placement_client.get_provider(placement.client,
                                                 gpu['rp_uuid'])
        placement_client.set_inventories(
            placement.client, gpu['rp_uuid'], provider['generation'],
            {gpu['rc']: {'total': 4, 'max_unit': 4}})
        result = checks._check_adoption()
        self.assertEqual(upgradecheck.Code.FAILURE, result.code)
        self.assertIn('%s: Placement has 4 of PGPU, the database 1'
                      % gpu['name'], result.details)


def upstream_providers(placement, devices):
    """The providers upstream's conductor made for ``devices``: a child
    of the host's compute node per deployable, named by it, uuid derived
    from the name, inventory ``{rc: total, max_unit}``, traits those of
    its ``trait*`` attributes. ``{hostname: compute node uuid}``."""
    client = placement.client
    roots = {}
    for device in devices:
        host = device['hostname']
        if host not in roots:
            roots[host] = placement.create_compute_node(
                host, remove_after=True)['uuid']
        deployable = device['deployable']
        child = placement_client.create_provider(
            client, deployable['name'], uuid=deployable['rp_uuid'],
            parent_uuid=roots[host])
        placement_client.set_inventories(
            client, child['uuid'], child['generation'],
            {deployable['rc']: {'total': deployable['num_accelerators'],
                                'max_unit': deployable['num_accelerators']}})
        for trait in deployable['traits']:
            if trait.startswith('CUSTOM_'):
                placement_client.ensure_trait(client, trait)
        placement_client.set_traits(
            client, child['uuid'],
            placement_client.get_provider(client,
                                          child['uuid'])['generation'],
            deployable['traits'])
    return roots


def tree_generations(placement, roots):
    return {p['uuid']: p['generation'] for root in roots.values()
            for p in placement_client.list_tree(placement.client, root)}


def reported_devices(devices, hostname):
    """What our agent reports on ``hostname`` when it finds the hardware
    upstream's agent found there."""
    report = []
    for device in devices:
        if device['hostname'] != hostname:
            continue
        deployable = device['deployable']
        attributes = [dd.DriverAttribute(key=key, value=value)
                      for key, (_uuid, value) in device['attributes'].items()]
        handles = [dd.DriverAttachHandle(
            attach_type=device['attach_type'], in_use=False, attach_info=info)
            for info in device['attach_infos']]
        report.append(dd.DriverDevice(
            vendor=device['vendor'], model=device['model'],
            type=device['type'], std_board_info=device['std_board_info'],
            vendor_board_info=device['vendor_board_info'], stub=False,
            controlpath_id=dd.DriverControlPathID(
                cpid_type='PCI', cpid_info=device['cpid_info']),
            deployable_list=[dd.DriverDeployable(
                name=deployable['name'],
                num_accelerators=deployable['num_accelerators'],
                driver_name=deployable['driver_name'],
                attribute_list=attributes, attach_handle_list=handles)]))
    return report


def upstream_revision(release):
    return {'17.0.0': 'b47c8f2d1e3a', '14.1.0': '6c77bd6afea5'}[release]


class Upstream17MySQLTest(_AdoptionTests, base.APIResourceTestCase):
    release = '17.0.0'
    backend = 'mysql'


class Upstream17PostgreSQLTest(_AdoptionTests, base.APIResourceTestCase):
    release = '17.0.0'
    backend = 'postgresql'


class Upstream14MySQLTest(_AdoptionTests, base.APIResourceTestCase):
    release = '14.1.0'
    backend = 'mysql'


class Upstream14PostgreSQLTest(_AdoptionTests, base.APIResourceTestCase):
    release = '14.1.0'
    backend = 'postgresql'


class Upstream17IntoSQLiteTest(_AdoptionTests, base.APIResourceTestCase):
    """The all-in-one's database adopts upstream's (on MariaDB)."""
    release = '17.0.0'
    upstream_backend = 'mysql'
    backend = 'sqlite'


class AdoptCommandTest(base.APIResourceTestCase):
    """``cyborg-dbsync adopt`` and ``adopt_accept`` as an operator runs
    them, against upstream 17.0.0 on MariaDB."""

    backend = 'mysql'

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        _DATABASES.make('17.0.0', cls.backend)

    def setUp(self):
        super().setUp()
        self.upstream = _DATABASES.get(self, '17.0.0', self.backend)
        self.config_file = self.useFixture(fixtures.TempDir()).join(
            'cyborg.conf')
        with open(self.config_file, 'w') as f:
            f.write('[database]\nconnection = %s\nmax_retries = 0\n'
                    % self.db.url)

    def dbsync(self, *argv):
        return subprocess.run(
            [sys.executable, '-m', 'cyborg.cmd.dbsync', '--config-file',
             self.config_file, *argv], capture_output=True, text=True,
            timeout=120, env=dict(os.environ, PYTHONWARNINGS='ignore'))

    def test_dry_run_then_adopt_then_accept(self):
        dry = self.dbsync('adopt', '--from', self.upstream.url, '--dry-run')
        self.assertEqual(0, dry.returncode, dry.stderr)
        self.assertIn('Upstream Cyborg 17.0.0 (alembic revision '
                      'b47c8f2d1e3a).', dry.stdout)
        self.assertIn('  compute-a.example.org', dry.stdout)
        self.assertIn('Cannot adopt: 0 row(s)', dry.stdout)
        with self.db.engine.connect() as connection:
            self.assertEqual(0, sum(adopt.target_counts(connection).values()))

        done = self.dbsync('adopt', '--from', self.upstream.url)
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertIn('devices 3', done.stdout)
        again = self.dbsync('adopt', '--from', self.upstream.url)
        self.assertEqual(2, again.returncode)
        self.assertIn('not empty', again.stderr)

        accepted = self.dbsync('adopt_accept', '--host',
                               'compute-b.example.org')
        self.assertEqual(0, accepted.returncode, accepted.stderr)
        twice = self.dbsync('adopt_accept', '--host', 'compute-b.example.org')
        self.assertEqual(2, twice.returncode)
        self.assertEqual(2, self.dbsync('adopt_accept').returncode)

    def test_operator_mistakes_are_one_line_and_exit_2(self):
        for url, text in (
                ('nosuchdialect://x', 'bad upstream database URL'),
                ('mysql+pymysql://root@127.0.0.1:1/x',
                 'cannot read the upstream database'),
                (self.db.url, 'unknown upstream Cyborg version')):
            result = self.dbsync('adopt', '--from', url, '--dry-run')
            self.assertEqual(2, result.returncode, result.stderr)
            self.assertIn(text, result.stderr)
            self.assertEqual(1, len(result.stderr.strip().splitlines()),
                             result.stderr)


# Run by upstream's Python: its fake driver's report on host argv[1], as
# plain data.
_UPSTREAM_FAKE_CARD = '''
import json, sys
from cyborg.conf import CONF
CONF([], project='cyborg', default_config_files=[])
CONF.set_override('host', sys.argv[1])
from cyborg.accelerator.drivers.fake import FakeDriver
print(json.dumps([d.obj_to_primitive()['cyborg_object.data']
                  for d in FakeDriver().discover()]))
'''


def _card(device):
    """A driver device of ours or upstream's (its primitive's data) as
    plain data, field for field."""
    def field(obj, name):
        return obj[name] if isinstance(obj, dict) else getattr(obj, name)

    def data(obj):
        return obj.get('cyborg_object.data', obj) if isinstance(
            obj, dict) else obj

    cpid = data(field(device, 'controlpath_id'))
    return {
        'device': [field(device, f) for f in (
            'vendor', 'model', 'type', 'std_board_info',
            'vendor_board_info', 'stub')],
        'controlpath_id': [field(cpid, f) for f in ('cpid_type',
                                                     'cpid_info')],
        'deployables': [{
            'fields': [field(d, f) for f in ('name', 'num_accelerators',
                                             'driver_name')],
            'attributes': [[field(data(a), 'key'), field(data(a), 'value')]
                           for a in field(d, 'attribute_list')],
            'handles': [[field(data(h), f) for f in (
                'attach_type', 'attach_info', 'in_use')]
                for h in field(d, 'attach_handle_list')]}
            for d in map(data, field(device, 'deployable_list'))]}


class UpstreamFakeDriverTest(base.APIResourceTestCase):
    """``[fake_driver] report_as = upstream`` reports the card exactly as
    upstream 17.0.0's fake driver does, on the same host."""

    backend = 'sqlite'

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        upstream.prepare('17.0.0')

    def test_our_card_is_upstreams_field_for_field(self):
        try:
            bin_dir = upstream.venv('17.0.0')
        except upstream.Unavailable as e:
            services.unavailable(self, str(e))
        host = 'compute-1.example.org'
        theirs = json.loads(upstream._run(
            [os.path.join(bin_dir, 'python'), '-c', _UPSTREAM_FAKE_CARD,
             host], "upstream's fake driver").strip().splitlines()[-1])
        self.flags(host=host)
        self.flags(report_as='upstream', group='fake_driver')
        ours = fake_driver.FakeDriver(self.conf).discover()
        self.assertEqual([_card(d) for d in theirs],
                         [_card(d) for d in ours])
