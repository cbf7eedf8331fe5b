"""The report's rows inserted with Core (``cyborg.db.rows.insert``, used by
``cyborg.db.devices``) against each real database: the rows the ORM
wrote, column by column; their ids in the order given, from one INSERT;
and no deleted ORM object read back in place of a new row."""

from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg.common import context as cyborg_context
from cyborg.db import api as db_api
from cyborg.db import devices as db_devices
from cyborg.db import models
from cyborg.db import rows as db_rows
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures

HOST = 'cmp-1'
DEVICE = {'type': 'FPGA', 'vendor': '8086', 'model': 'PAC',
          'std_board_info': '{"product_id": "09c4"}',
          'vendor_board_info': None}
RP = uuidutils.generate_uuid()


# Parents first.
MODELS = (models.Device, models.ControlpathID, models.Deployable,
          models.Attribute, models.AttachHandle)
REFERENCES = {'device_id': models.Device, 'cpid_id': models.ControlpathID,
              'deployable_id': models.Deployable}


def _rows_as_stored(session, tree):
    """{model: [row as a dict]} as the database holds them; the new ids
    (and fresh uuids, creation times) set aside, a reference as whether
    it is the one to ``tree``'s ``{model: id}``."""
    found = {}
    for model in MODELS:
        found[model] = []
        for row in session.execute(sa.select(model.__table__)).mappings():
            row = dict(row)
            assert uuidutils.is_uuid_like(row.pop('uuid')), row
            assert row.pop('created_at') is not None, row
            del row['id']
            for column, parent in REFERENCES.items():
                if column in row:
                    row[column] = row[column] == tree[parent]
            found[model].append(row)
    return found


class _RowsTests:

    backend = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(
            cyborg_fixtures.Database(self, self.backend))
        self.ctx = cyborg_context.get_admin_context()

    def statements(self, verb='INSERT'):
        """The statements of ``verb`` run from now on."""
        run = []

        def record(_conn, _cursor, statement, *_args):
            if statement.lstrip().upper().startswith(verb):
                run.append(statement)
        sa.event.listen(self.database.engine, 'before_cursor_execute',
                        record)
        self.addCleanup(sa.event.remove, self.database.engine,
                        'before_cursor_execute', record)
        return run

    def _orm_tree(self):
        """A device and a row of each kind under it, as the ORM inserted
        them before Core did."""
        session = self.ctx.session
        device = db_rows.new_row(models.Device, hostname=HOST,
                                 status='enabled', **DEVICE)
        session.add(device)
        session.flush()
        cpid = db_rows.new_row(models.ControlpathID, device_id=device.id,
                               cpid_type='PCI', cpid_info='0000:01:00.0')
        deployable = db_rows.new_row(
            models.Deployable, name='dep', num_accelerators=2,
            device_id=device.id, driver_name='fake_driver', rp_uuid=RP)
        session.add_all([cpid, deployable])
        session.flush()
        session.add_all([
            db_rows.new_row(models.Attribute, deployable_id=deployable.id,
                            key='rc', value='FPGA'),
            db_rows.new_row(models.AttachHandle, deployable_id=deployable.id,
                            cpid_id=cpid.id, attach_type='PCI',
                            attach_info='{"bus": "01"}', in_use=False)])
        session.flush()
        return {models.Device: device.id, models.ControlpathID: cpid.id,
                models.Deployable: deployable.id}

    def _core_tree(self):
        """The same, through ``db_devices``."""
        [cpid] = db_devices.add_devices(
            self.ctx, HOST, 'enabled', [(DEVICE, 'PCI', '0000:01:00.0')])
        [deployable_id] = db_devices.add_deployables(self.ctx, [{
            'name': 'dep', 'num_accelerators': 2,
            'device_id': cpid.device_id, 'driver_name': 'fake_driver',
            'rp_uuid': RP}])
        db_devices.add_attributes(self.ctx, [(deployable_id, 'rc', 'FPGA')])
        db_devices.add_attach_handles(self.ctx, [
            (deployable_id, cpid.id, 'PCI', '{"bus": "01"}')])
        return {models.Device: cpid.device_id, models.ControlpathID: cpid.id,
                models.Deployable: deployable_id}

    def test_core_rows_are_the_rows_the_orm_wrote(self):
        with db_api.writer.using(self.ctx) as session:
            orm = _rows_as_stored(session, self._orm_tree())
            for model in reversed(MODELS):
                session.execute(sa.delete(model.__table__))
            session.expunge_all()
            core = _rows_as_stored(session, self._core_tree())
        for model in MODELS:
            self.assertEqual(1, len(orm[model]), model)
            self.assertEqual(orm[model], core[model], model)
        self.assertEqual({'in_use': False, 'updated_at': None,
                          'deployable_id': True, 'cpid_id': True,
                          'attach_type': 'PCI',
                          'attach_info': '{"bus": "01"}'},
                         core[models.AttachHandle][0])

    def test_ids_in_the_order_given_from_one_insert(self):
        keys = ['key-%03d' % i for i in range(150)]
        keys.reverse()
        with db_api.writer.using(self.ctx) as session:
            [cpid] = db_devices.add_devices(
                self.ctx, HOST, 'enabled', [(DEVICE, 'PCI', '0000:01:00.0')])
            deployable_ids = db_devices.add_deployables(self.ctx, [{
                'name': 'dep-%d' % i, 'num_accelerators': 1,
                'device_id': cpid.device_id, 'driver_name': None,
                'rp_uuid': None} for i in range(3)])
            run = self.statements()
            ids = db_rows.insert(self.ctx, models.Attribute, [
                {'deployable_id': deployable_ids[1], 'key': key,
                 'value': 'v'} for key in keys])
            self.assertEqual(1, len(run))
            by_id = dict(session.query(models.Attribute.id,
                                       models.Attribute.key))
        self.assertEqual(keys, [by_id[i] for i in ids])
        with db_api.reader.using(self.ctx) as session:
            self.assertEqual(['dep-0', 'dep-1', 'dep-2'], [
                session.get(models.Deployable, i).name
                for i in deployable_ids])
            self.assertEqual(cpid.device_id, session.get(
                models.ControlpathID, cpid.id).device_id)

    def test_a_deleted_row_is_not_read_for_a_new_one(self):
        with db_api.writer.using(self.ctx):
            [cpid] = db_devices.add_devices(
                self.ctx, HOST, 'enabled', [(DEVICE, 'PCI', '0000:01:00.0')])
            db_devices.add_deployables(self.ctx, [{
                'name': name, 'num_accelerators': 1,
                'device_id': cpid.device_id, 'driver_name': None,
                'rp_uuid': None} for name in ('dep-a', 'dep-b')])
        with db_api.writer.using(self.ctx):
            # The tree's ORM objects are in the session, as in a report.
            [node] = db_devices.get_host_tree(self.ctx, HOST)
            gone = node.deployables[-1].row
            db_devices.delete_deployables(self.ctx, [gone.id])
            [new_id] = db_devices.add_deployables(self.ctx, [{
                'name': 'dep-c', 'num_accelerators': 1,
                'device_id': cpid.device_id, 'driver_name': None,
                'rp_uuid': None}])
            if self.backend == 'sqlite':
                # SQLite gives the deleted row's id to the new row.
                self.assertEqual(gone.id, new_id)
            self.assertEqual(['dep-a', 'dep-c'], [
                row.name for row, _attrs, _reserved
                in db_devices.get_providers(self.ctx, HOST)])

    def test_providers_of_several_hosts_in_two_statements(self):
        # Three hosts, one without devices; enough deployables on one
        # that their attributes are read in two slices.
        with db_api.writer.using(self.ctx):
            for host, count in (('cmp-a', 3), ('cmp-b', 1000)):
                [cpid] = db_devices.add_devices(
                    self.ctx, host, 'enabled',
                    [(DEVICE, 'PCI', '0000:01:00.0')])
                ids = db_devices.add_deployables(self.ctx, [{
                    'name': '%s-dep-%04d' % (host, i), 'num_accelerators': 2,
                    'device_id': cpid.device_id, 'driver_name': None,
                    'rp_uuid': None} for i in range(count)])
                db_rows.insert(self.ctx, models.Attribute, [
                    {'deployable_id': i, 'key': 'rc', 'value': host}
                    for i in ids])
        run = self.statements('SELECT')
        with db_api.reader.using(self.ctx):
            found = db_devices.get_providers_of(
                self.ctx, ['cmp-a', 'cmp-b', 'cmp-none'])
            # (one for the deployables, two for 1,003 attributes)
            self.assertEqual(3, len(run), run)
            self.assertEqual(found['cmp-a'], db_devices.get_providers(
                self.ctx, 'cmp-a'))
        self.assertEqual([], found['cmp-none'])
        self.assertEqual(['cmp-a-dep-0000', 'cmp-a-dep-0001',
                          'cmp-a-dep-0002'],
                         [row.name for row, _a, _r in found['cmp-a']])
        self.assertEqual(1000, len(found['cmp-b']))
        self.assertEqual({('cmp-b', 0)}, {
            (attributes['rc'], reserved)
            for _row, attributes, reserved in found['cmp-b']})
        if self.backend == 'mysql':
            # MySQL compares names without case: rows of the host asked
            # for under another case are its.
            with db_api.reader.using(self.ctx):
                self.assertEqual(3, len(db_devices.get_providers_of(
                    self.ctx, ['CMP-A'])['CMP-A']))
                # Nor trailing spaces: one host asked for has every row.
                self.assertEqual(3, len(db_devices.get_providers(
                    self.ctx, 'cmp-a ')))


class RowsSQLiteTest(_RowsTests, base.TestCase):
    backend = 'sqlite'


class RowsMySQLTest(_RowsTests, base.TestCase):
    backend = 'mysql'


class RowsPostgreSQLTest(_RowsTests, base.TestCase):
    backend = 'postgresql'
