"""Agents' reports reconciled with a real database and a real Placement."""

import json
import os
import threading
from unittest import mock
import uuid

import fixtures
import sqlalchemy as sa

from cyborg.agent import manager as agent_manager
from cyborg.agent import reporter as agent_reporter
from cyborg.common import context
from cyborg.common import exception
from cyborg.common import rpc
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import placement_service
from cyborg.conductor import placement_sync
from cyborg.conductor import reconciler
from cyborg.conductor import reporting
from cyborg.db import api as db_api
from cyborg.db import devices as db_devices
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.db import hardware as db_hardware
from cyborg.objects import driver_device as dd
from cyborg.objects import hardware as hardware_obj
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests import conductor_versions
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional import test_hello

WRITES = ('INSERT', 'UPDATE', 'DELETE')


def get_test_function(address='0000:3b:00.0', offered=False, **values):
    """A HardwareFunction: by default a GPU the vGPU host driver runs."""
    fields = dict(
        address=address, vendor_id='10de', product_id='1eb8',
        name='NVIDIA Corporation TU104GL [Tesla T4]', kernel_driver='nvidia',
        driver='nvidia_gpu_driver', offered=offered,
        reason=None if offered else 'the vGPU host driver manages it',
        action=None if offered else 'enable one of its types',
        setup_required=not offered, reboot_required=False)
    fields.update(values)
    return hardware_obj.HardwareFunction(**fields)


def get_test_device(hostname, function=0, num=16, rc='FPGA',
                    traits=('CUSTOM_FAKE_DEVICE',), stub=False):
    """A DriverDevice like the fake driver's, at PCI function
    ``function``, with one deployable of ``num`` accelerators."""
    pci = {'domain': '0000', 'bus': '0c', 'device': '00',
           'function': str(function)}
    attributes = [dd.DriverAttribute(key='rc', value=rc)]
    attributes += [dd.DriverAttribute(key='trait%d' % i, value=t)
                   for i, t in enumerate(traits)]
    handles = [dd.DriverAttachHandle(
        attach_type='TEST_PCI', in_use=False,
        attach_info=json.dumps(dict(pci, vf=i), sort_keys=True))
        for i in range(num)]
    deployable = dd.DriverDeployable(
        name='%s_dev%d' % (hostname, function), num_accelerators=num,
        driver_name='FAKEDRIVER', attribute_list=attributes,
        attach_handle_list=handles)
    return dd.DriverDevice(
        vendor='0xABCD', model='fake', type='FPGA', std_board_info='{}',
        vendor_board_info='fake', stub=stub,
        controlpath_id=dd.DriverControlPathID(
            cpid_type='PCI', cpid_info=json.dumps(pci, sort_keys=True)),
        deployable_list=[deployable])


class _Row:
    """A deployable row as get_providers gives it."""

    def __init__(self, name, num_accelerators):
        self.name = name
        self.num_accelerators = num_accelerators


class _InProcessConductor(conductor_versions.RPCVersions):
    """The conductor's side of an agent's hello and report, called in
    this process: what its RPC endpoints run."""

    def __init__(self, conf):
        self.reporting = reporting.Reporting(conf)

    def agent_hello(self, context, hello, timeout=None):
        row, drivers, _was_down = db_hosts.record_hello(
            context, hello.hostname, hello.endpoint, hello.version, [])
        return host_obj.Host(hostname=row.hostname, status='up',
                             report_generation=row.report_generation,
                             report_seq=row.report_seq)

    def report_data(self, context, hostname, devices, report_hash,
                    report_seq=None, hardware=None, timeout=None):
        return self.reporting.report(context, hostname, devices,
                                     report_hash, report_seq, hardware)


class _ReportingTests:
    """Run by the classes at the end against each database."""

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(
            cyborg_fixtures.Database(self, self.db))
        self.placement = self.useFixture(
            placement_fixture.Placement(self.conf))
        self.ctx = context.get_admin_context()
        self.hostname = 'host-%s' % uuid.uuid4().hex[:12]
        db_hosts.record_hello(self.ctx, self.hostname, self.hostname, '1',
                              [])
        self.root = self.placement.create_compute_node(self.hostname)
        self.writes = []
        self.statements = []
        sa.event.listen(self.database.engine, 'before_cursor_execute',
                        self._count_write)

    def _count_write(self, _conn, _cursor, statement, *_args):
        self.statements.append(statement)
        if statement.lstrip().upper().startswith(WRITES):
            self.writes.append(statement)

    def tables_written(self):
        """Sorted (verb, table) of the write statements counted."""
        result = []
        for statement in self.writes:
            words = statement.split()
            table = words[1] if words[0].upper() == 'UPDATE' else words[2]
            result.append((words[0].upper(), table.strip('`"')))
        return sorted(result)

    def report(self, devices, seq=None, hardware=None):
        digest = agent_reporter.report_hash(devices, hardware)
        self.placement.requests()
        del self.writes[:]
        return digest, reporting.Reporting(self.conf).report(
            self.ctx, self.hostname, devices, digest, seq, hardware)

    def state(self):
        return db_hosts.get_report_state(self.ctx, self.hostname)

    def rows(self, model):
        with db_api.reader.using(self.ctx) as session:
            return session.query(model).all()

    def host_deployables(self):
        with db_api.reader.using(self.ctx) as session:
            return (session.query(models.Deployable)
                    .join(models.Device,
                          models.Device.id == models.Deployable.device_id)
                    .filter(models.Device.hostname == self.hostname)
                    .order_by(models.Deployable.name).all())

    def provider(self, name):
        rp_uuid = placement_sync.provider_uuid(name)
        status, body = self.placement.get('/resource_providers/%s' % rp_uuid)
        if status == 404:
            return None
        _, inventories = self.placement.get(
            '/resource_providers/%s/inventories' % rp_uuid)
        _, traits = self.placement.get(
            '/resource_providers/%s/traits' % rp_uuid)
        return {'parent': body['parent_provider_uuid'],
                'inventories': {rc: (inv['total'], inv['max_unit'])
                                for rc, inv in
                                inventories['inventories'].items()},
                'traits': set(traits['traits'])}

    def test_new_device_reaches_db_and_placement(self):
        digest, accepted = self.report([get_test_device(self.hostname)])
        self.assertEqual(digest, accepted)
        [deployable] = self.host_deployables()
        name = '%s_dev0' % self.hostname
        self.assertEqual((name, 16), (deployable.name,
                                      deployable.num_accelerators))
        self.assertEqual(placement_sync.provider_uuid(name),
                         deployable.rp_uuid)
        self.assertEqual(16, len(self.rows(models.AttachHandle)))
        self.assertEqual({'rc': 'FPGA', 'trait0': 'CUSTOM_FAKE_DEVICE'},
                         {a.key: a.value for a in self.rows(models.Attribute)})
        self.assertEqual({
            'parent': self.root['uuid'],
            'inventories': {'FPGA': (16, 16)},
            'traits': {'CUSTOM_FAKE_DEVICE', 'OWNER_CYBORG'}},
            self.provider(name))
        self.assertEqual(digest, db_hosts.get_by_hostname(
            self.ctx, self.hostname)[0].report_hash)

    def test_attach_info_failing_its_schema_is_not_stored(self):
        device = get_test_device(self.hostname, num=2)
        [deployable] = device.deployable_list
        deployable.attach_handle_list.append(dd.DriverAttachHandle(
            attach_type='MDEV', in_use=False, attach_info=json.dumps(
                {'domain': '0000', 'bus': '0c', 'device': '00',
                 'function': '0', 'asked_type': '../../mdev/devices'})))
        self.report([device])
        self.assertEqual(['TEST_PCI', 'TEST_PCI'], [
            h.attach_type for h in self.rows(models.AttachHandle)])

    def test_a_host_cannot_take_another_hosts_deployable_name(self):
        other = 'host-%s' % uuid.uuid4().hex[:12]
        db_hosts.record_hello(self.ctx, other, other, '1', [])
        self.placement.create_compute_node(other)
        name = '%s_0000_3b_00_0' % other
        squat = get_test_device(self.hostname)
        squat.deployable_list[0].name = name
        self.report([squat])
        self.assertEqual([], self.rows(models.Deployable))
        self.assertIsNone(self.provider(name))
        # The host it names reports it later: stored, in Placement.
        theirs = get_test_device(other)
        theirs.deployable_list[0].name = name
        digest = agent_reporter.report_hash([theirs], None)
        self.assertEqual(digest, reporting.Reporting(self.conf).report(
            self.ctx, other, [theirs], digest, None, None))
        self.assertEqual([name], [d.name for d in self.rows(
            models.Deployable)])
        self.assertIsNotNone(self.provider(name))

    def test_same_report_again_writes_and_calls_nothing(self):
        devices = [get_test_device(self.hostname),
                   get_test_device(self.hostname, function=1)]
        self.report(devices)
        digest, accepted = self.report(devices)
        self.assertEqual(digest, accepted)
        self.assertEqual([], self.writes)
        self.assertEqual([], self.placement.requests())

    def agent_reporter(self, devices):
        """A real agent's Reporter for our host, offering ``devices``,
        with its state file, talking to this database's conductor."""
        return agent_reporter.Reporter(
            self.hostname, self.conf, lambda: (devices, None), list,
            _InProcessConductor(self.conf))

    def test_an_agent_sending_its_report_again_writes_nothing(self):
        state_dir = self.useFixture(fixtures.TempDir()).path
        self.flags(state_file=os.path.join(state_dir, 'state.json'),
                   sysfs_root=state_dir, group='agent')
        devices = [get_test_device(self.hostname),
                   get_test_device(self.hostname, function=1)]
        agent = self.agent_reporter(devices)
        self.assertTrue(agent.hello(self.ctx))
        self.assertTrue(agent.report(self.ctx))
        applied = self.state()
        # The conductor asks for a full report (a re-registration), and
        # then the agent restarts (from its state file) and is asked
        # again: the same report, with the sequence the database holds.
        for again in (agent, self.agent_reporter(devices)):
            self.assertTrue(again.hello(self.ctx, full_report=True))
            self.placement.requests()
            del self.statements[:], self.writes[:]
            self.assertTrue(again.report(self.ctx))
            self.assertEqual([], self.writes)
            # One SELECT of the host's report state answers it.
            self.assertEqual(['SELECT'], [
                statement.split()[0].upper()
                for statement in self.statements
                if statement.split()[0].upper() not in ('BEGIN',
                                                        'COMMIT')])
            self.assertEqual([], self.placement.requests())
            self.assertEqual(applied, self.state())
        # New content moves the sequence on, and is applied.
        devices.pop()
        self.assertTrue(agent.report(self.ctx))
        self.assertGreater(self.state().report_seq, applied.report_seq)
        self.assertEqual(1, len(self.host_deployables()))

    def test_same_content_new_hash_writes_no_device_rows(self):
        devices = [get_test_device(self.hostname)]
        self.report(devices)
        self.placement.requests()
        del self.writes[:]
        self.assertEqual('another-hash', reporting.Reporting(
            self.conf).report(self.ctx, self.hostname, devices,
                              'another-hash'))
        # Only the host's report bookkeeping changes, and Placement,
        # synced to these rows, is not asked.
        self.assertEqual([('UPDATE', 'hosts')], self.tables_written())
        self.assertEqual([], self.placement.requests())
        self.assertTrue(self.state().shows('another-hash'))

    def test_removed_device_and_its_provider_go(self):
        self.report([get_test_device(self.hostname),
                     get_test_device(self.hostname, function=1)])
        _, accepted = self.report([get_test_device(self.hostname)])
        self.assertIsNotNone(accepted)
        self.assertEqual(['%s_dev0' % self.hostname],
                         [d.name for d in self.host_deployables()])
        self.assertEqual(1, len(self.rows(models.Device)))
        self.assertEqual(1, len(self.rows(models.ControlpathID)))
        self.assertEqual(16, len(self.rows(models.AttachHandle)))
        self.assertIsNone(self.provider('%s_dev1' % self.hostname))
        self.assertIsNotNone(self.provider('%s_dev0' % self.hostname))

    def test_num_accelerators_change_follows_to_inventory(self):
        self.report([get_test_device(self.hostname)])
        self.report([get_test_device(self.hostname, num=8)])
        [deployable] = self.host_deployables()
        self.assertEqual(8, deployable.num_accelerators)
        self.assertEqual(8, len(self.rows(models.AttachHandle)))
        self.assertEqual({'FPGA': (8, 8)}, self.provider(
            deployable.name)['inventories'])

    def test_reprogrammed_function_changes_traits(self):
        self.report([get_test_device(self.hostname)])
        self.report([get_test_device(
            self.hostname, traits=('CUSTOM_FUNCTION_B', 'CUSTOM_REGION_X'))])
        # Only what changed is written: one attribute changed, one added,
        # and the host's bookkeeping.
        self.assertEqual([('INSERT', 'attributes'), ('UPDATE', 'attributes'),
                          ('UPDATE', 'hosts'), ('UPDATE', 'hosts')],
                         self.tables_written())
        self.assertEqual({'CUSTOM_FUNCTION_B', 'CUSTOM_REGION_X',
                          'OWNER_CYBORG'},
                         self.provider('%s_dev0' % self.hostname)['traits'])

    def test_resource_class_change_creates_custom_class(self):
        self.report([get_test_device(self.hostname)])
        self.report([get_test_device(self.hostname, rc='CUSTOM_ACCEL_X')])
        self.assertEqual({'CUSTOM_ACCEL_X': (16, 16)}, self.provider(
            '%s_dev0' % self.hostname)['inventories'])

    def test_placement_down_keeps_db_and_catches_up(self):
        devices = [get_test_device(self.hostname)]
        with self.placement.down():
            digest, accepted = self.report(devices)
        self.assertIsNone(accepted)
        self.assertEqual(1, len(self.host_deployables()))
        # The rows show the report, Placement does not.
        self.assertEqual(digest, self.state().report_hash)
        self.assertFalse(self.state().shows(digest))
        self.assertIsNone(self.provider('%s_dev0' % self.hostname))
        # The agent sends the same report again: the database has it
        # already, Placement catches up.
        _, accepted = self.report(devices)
        self.assertEqual(digest, accepted)
        self.assertEqual([('UPDATE', 'hosts')] * 2, self.tables_written())
        self.assertEqual({'FPGA': (16, 16)}, self.provider(
            '%s_dev0' % self.hostname)['inventories'])

    def test_catch_up_with_placement_down_is_left_to_the_retry(self):
        # While our sync runs, another conductor applies a newer report of
        # the host; then Placement fails our catch-up sync.
        old = [get_test_device(self.hostname, num=2)]
        new = [get_test_device(self.hostname, num=5)]
        ours = reporting.Reporting(self.conf)
        sync_host = ours.placement.sync.apply_tree
        calls = []

        def racing_then_down(*args):
            calls.append(args)
            if len(calls) == 1:
                sync_host(*args)
                self.assertEqual(
                    agent_reporter.report_hash(new),
                    reporting.Reporting(self.conf).report(
                        self.ctx, self.hostname, new,
                        agent_reporter.report_hash(new)))
                return
            raise exception.PlacementError(
                method='GET', url='/resource_providers', status=503,
                detail='down')

        ours.placement.sync.apply_tree = racing_then_down
        self.assertIsNone(ours.report(self.ctx, self.hostname, old,
                                      agent_reporter.report_hash(old)))
        self.assertEqual(2, len(calls))
        # Nothing counts as shown; the host waits for the periodic retry,
        # which makes Placement show what the database has: the newer.
        self.assertFalse(self.state().shows(agent_reporter.report_hash(new)))
        self.assertEqual([self.hostname],
                         db_hosts.sync_pending_hosts(self.ctx))
        placement_service.PlacementService(self.conf).retry_pending(
            self.ctx)
        self.assertEqual({'FPGA': (5, 5)}, self.provider(
            '%s_dev0' % self.hostname)['inventories'])
        self.assertEqual([], db_hosts.sync_pending_hosts(self.ctx))
        # The agent's resend of the newer is then answered at once.
        self.assertTrue(self.state().shows(agent_reporter.report_hash(new)))

    def test_a_report_sent_again_while_its_sync_runs_is_not_synced_twice(
            self):
        # The agent gave up waiting for our answer and sends the report
        # again while our sync of it still runs: the resend is answered
        # at once (send again later), not with a second sync alongside.
        devices = [get_test_device(self.hostname)]
        digest = agent_reporter.report_hash(devices)
        ours = reporting.Reporting(self.conf)
        sync_host = ours.placement.sync.apply_tree
        calls, started, go = [], threading.Event(), threading.Event()

        def slow_first(*args):
            calls.append(args)
            if len(calls) == 1:
                started.set()
                self.assertTrue(go.wait(30))
            sync_host(*args)

        ours.placement.sync.apply_tree = slow_first
        answers = {}
        first = threading.Thread(target=lambda: answers.update(
            first=ours.report(self.ctx, self.hostname, devices, digest)))
        first.start()
        self.addCleanup(first.join, 30)
        self.addCleanup(go.set)
        self.assertTrue(started.wait(30))
        self.assertIsNone(ours.report(self.ctx, self.hostname, devices,
                                      digest))
        self.assertEqual(1, len(calls))
        # Nothing newer than what is being synced: no retry is owed.
        self.assertEqual([], db_hosts.sync_pending_hosts(self.ctx))
        go.set()
        first.join(30)
        self.assertEqual(digest, answers['first'])
        # The next resend is answered from the database.
        self.assertEqual(digest, ours.report(self.ctx, self.hostname,
                                             devices, digest))
        self.assertEqual(1, len(calls))

    def test_a_newer_report_while_a_sync_runs_is_caught_up(self):
        # A newer report of the host arrives while the older one's sync
        # runs here: it is written and answered None; the older sync,
        # finding the rows moved on, syncs Placement to the newer.
        old = [get_test_device(self.hostname, num=2)]
        new = [get_test_device(self.hostname, num=5)]
        ours = reporting.Reporting(self.conf)
        sync_host = ours.placement.sync.apply_tree
        started, go = threading.Event(), threading.Event()

        def slow_first(*args):
            if not started.is_set():
                started.set()
                self.assertTrue(go.wait(30))
            sync_host(*args)

        ours.placement.sync.apply_tree = slow_first
        answers = {}
        first = threading.Thread(target=lambda: answers.update(
            old=ours.report(self.ctx, self.hostname, old,
                            agent_reporter.report_hash(old))))
        first.start()
        self.addCleanup(first.join, 30)
        self.addCleanup(go.set)
        self.assertTrue(started.wait(30))
        self.assertIsNone(ours.report(self.ctx, self.hostname, new,
                                      agent_reporter.report_hash(new)))
        # Owed a sync: the periodic retry does it if no one else does.
        self.assertEqual([self.hostname],
                         db_hosts.sync_pending_hosts(self.ctx))
        go.set()
        first.join(30)
        self.assertIsNone(answers['old'])
        self.assertEqual({'FPGA': (5, 5)}, self.provider(
            '%s_dev0' % self.hostname)['inventories'])
        self.assertEqual(agent_reporter.report_hash(new), ours.report(
            self.ctx, self.hostname, new, agent_reporter.report_hash(new)))

    def test_older_sync_failing_after_a_newer_one_is_caught_up(self):
        # Two conductors sync two reports of the host at once. The newer
        # report's sync lands first; our older one's writes land after it
        # and then fail (the newer one deleted a provider ours was
        # writing); the newer one records the host synced after that.
        self.report([get_test_device(self.hostname, num=1)])
        old = [get_test_device(self.hostname, num=2),
               get_test_device(self.hostname, function=1)]
        new = [get_test_device(self.hostname, num=5)]
        ours, theirs = (reporting.Reporting(self.conf),
                        reporting.Reporting(self.conf))
        our_sync = ours.placement.sync.apply_tree
        their_sync = theirs.placement.sync.apply_tree
        synced, go = threading.Event(), threading.Event()
        answers = {}

        def their_sync_waits(*args):
            their_sync(*args)
            synced.set()
            self.assertTrue(go.wait(30))

        theirs.placement.sync.apply_tree = their_sync_waits
        newer = threading.Thread(target=lambda: answers.update(
            new=theirs.report(self.ctx, self.hostname, new,
                              agent_reporter.report_hash(new))))

        def ours_lands_last_then_fails(*args):
            ours.placement.sync.apply_tree = our_sync
            newer.start()
            self.assertTrue(synced.wait(30))
            our_sync(*args)
            raise exception.PlacementError(
                method='PUT', url='/resource_providers/u/traits',
                status=404, detail='deleted by another writer')

        ours.placement.sync.apply_tree = ours_lands_last_then_fails
        sync_failed = ours.placement.sync_failed

        def failed_then_theirs_recorded(context, hostname):
            sync_failed(context, hostname)
            go.set()
            newer.join(30)

        ours.placement.sync_failed = failed_then_theirs_recorded
        self.assertIsNone(ours.report(self.ctx, self.hostname, old,
                                      agent_reporter.report_hash(old)))
        self.assertEqual(agent_reporter.report_hash(new), answers['new'])
        # The newer report is accepted, so Placement must show it, not
        # our older writes that landed after its.
        self.assertTrue(self.state().shows(agent_reporter.report_hash(new)))
        self.assertEqual({'FPGA': (5, 5)}, self.provider(
            '%s_dev0' % self.hostname)['inventories'])
        self.assertIsNone(self.provider('%s_dev1' % self.hostname))

    def test_removal_while_placement_down_caught_up(self):
        self.report([get_test_device(self.hostname),
                     get_test_device(self.hostname, function=1)])
        with self.placement.down():
            self.report([get_test_device(self.hostname)])
        self.assertIsNotNone(self.provider('%s_dev1' % self.hostname))
        self.report([get_test_device(self.hostname)])
        self.assertIsNone(self.provider('%s_dev1' % self.hostname))

    def test_handle_in_use_keeps_its_deployable(self):
        self.report([get_test_device(self.hostname)])
        with db_api.writer.using(self.ctx) as session:
            handle = session.query(models.AttachHandle).first()
            handle.in_use = True
        _, accepted = self.report([])
        self.assertIsNotNone(accepted)
        self.assertEqual(1, len(self.host_deployables()))
        self.assertEqual(16, len(self.rows(models.AttachHandle)))
        self.assertIsNotNone(self.provider('%s_dev0' % self.hostname))
        # Not recorded as applied: a release asks for the report again,
        # and the same report then does what it could not.
        self.assertEqual([self.hostname], db_hosts.awaiting_report(
            self.ctx, [self.hostname, 'other-host']))
        with db_api.writer.using(self.ctx) as session:
            session.query(models.AttachHandle).update({'in_use': False})
        _, accepted = self.report([])
        self.assertEqual([], self.host_deployables())
        self.assertEqual([], db_hosts.awaiting_report(self.ctx,
                                                      [self.hostname]))
        self.report([get_test_device(self.hostname)])
        with db_api.writer.using(self.ctx) as session:
            handle = session.query(models.AttachHandle).first()
            handle.in_use = True
        self.report([])
        with db_api.writer.using(self.ctx) as session:
            session.query(models.AttachHandle).update({'in_use': False})
        self.report([get_test_device(self.hostname, function=3)])
        self.assertEqual(['%s_dev3' % self.hostname],
                         [d.name for d in self.host_deployables()])
        self.assertIsNone(self.provider('%s_dev0' % self.hostname))

    def test_a_handle_in_use_follows_its_deployable_to_a_new_control_path(
            self):
        """The device under a deployable is reported at another control
        path while one of its handles, no longer reported, is in use: the
        handle is kept, under the new control path id, and the old one
        goes (a DBReferenceError on MariaDB and PostgreSQL before)."""
        self.report([get_test_device(self.hostname)])
        with db_api.writer.using(self.ctx) as session:
            handle = session.query(models.AttachHandle).first()
            handle.in_use = True
            kept = handle.id
        moved = get_test_device(self.hostname)
        pci = {'domain': '0000', 'bus': '0d', 'device': '00',
               'function': '0'}
        moved.controlpath_id = dd.DriverControlPathID(
            cpid_type='PCI', cpid_info=json.dumps(pci, sort_keys=True))
        for i, new in enumerate(
                moved.deployable_list[0].attach_handle_list):
            new.attach_info = json.dumps(dict(pci, vf=i), sort_keys=True)
        self.report([moved])
        [cpid] = self.rows(models.ControlpathID)
        self.assertEqual(pci, json.loads(cpid.cpid_info))
        self.assertEqual(1, len(self.rows(models.Device)))
        handles = {h.id: h for h in self.rows(models.AttachHandle)}
        self.assertEqual(17, len(handles))
        self.assertEqual((True, cpid.id),
                         (handles[kept].in_use, handles[kept].cpid_id))

    def device_events(self):
        """(action, cpid_info, deployables) of the device notifications
        sent, and forget them."""
        found = []
        for _ctx, message, priority, _retry in self.messaging.notifications:
            if message['event_type'].startswith('cyborg.device.'):
                self.assertEqual('INFO', priority)
                payload = message['payload']['cyborg_object.data']
                self.assertEqual(self.hostname, payload['hostname'])
                found.append((message['event_type'].rsplit('.', 1)[1],
                              json.loads(payload['cpid_info'])['function'],
                              payload['deployables']))
        del self.messaging.notifications[:]
        return sorted(found)

    def inventory_requests(self):
        return sorted((method, path.rsplit('/', 1)[-1])
                      for method, path in self.placement.requests()
                      if path.endswith(('/inventories', '/reshaper')))

    def test_inventories_in_one_request(self):
        devices = [get_test_device(self.hostname, function=f)
                   for f in range(3)]
        self.report(devices)
        requests = self.placement.requests()
        self.assertEqual([('POST', '/reshaper')],
                         [r for r in requests if r[1].endswith(
                             ('/inventories', '/reshaper'))])
        # The traits follow with the right generations: no conflict, no
        # re-read.
        self.assertEqual(3, len([r for r in requests
                                 if r[1].endswith('/traits')]))
        self.assertEqual(0, len([r for r in requests if r[0] == 'GET'
                                 and '/resource_providers/' in r[1]]))
        self.report([get_test_device(self.hostname, function=f, num=4)
                     for f in range(3)])
        self.assertEqual([('POST', 'reshaper')], self.inventory_requests())
        for f in range(3):
            self.assertEqual({'FPGA': (4, 4)}, self.provider(
                '%s_dev%d' % (self.hostname, f))['inventories'])

    def test_inventories_one_by_one_without_reshaper(self):
        service = placement_service.PlacementService(self.conf)
        service.sync._reshaper = False
        devices = [get_test_device(self.hostname, function=f)
                   for f in range(2)]
        self.placement.requests()
        reporting.Reporting(self.conf, service).report(
            self.ctx, self.hostname, devices,
            agent_reporter.report_hash(devices))
        self.assertEqual([('PUT', 'inventories')] * 2,
                         self.inventory_requests())
        self.assertEqual({'FPGA': (16, 16)}, self.provider(
            '%s_dev1' % self.hostname)['inventories'])

    def report_listing(self, devices):
        """Report ``devices``; the tree listings its sync made."""
        digest = agent_reporter.report_hash(devices)
        self.placement.requests()
        accepted = reporting.Reporting(self.conf).report(
            self.ctx, self.hostname, devices, digest)
        self.assertEqual(digest, accepted)
        return [path for method, path in self.placement.requests(query=True)
                if method == 'GET' and 'in_tree=' in path]

    def test_first_report_lists_no_tree_later_ones_do(self):
        self.assertEqual([], self.report_listing(
            [get_test_device(self.hostname)]))
        self.assertEqual(1, len(self.report_listing(
            [get_test_device(self.hostname, function=f) for f in range(2)])))
        self.assertIsNotNone(self.provider('%s_dev1' % self.hostname))

    def test_first_report_after_a_failed_first_sync_lists_the_tree(self):
        # The first sync stopped after creating a provider for a device
        # the next report no longer has: the host is not fresh any more,
        # so the tree is listed and the leftover deleted.
        devices = [get_test_device(self.hostname, function=f)
                   for f in range(2)]
        with mock.patch.object(placement_sync.placement, 'set_traits',
                               side_effect=exception.PlacementError(
                                   method='PUT', url='/', status=503,
                                   detail='down')):
            self.assertIsNone(self.report(devices)[1])
        self.assertIsNotNone(self.provider('%s_dev1' % self.hostname))
        self.assertEqual(1, len(self.report_listing(
            [get_test_device(self.hostname)])))
        self.assertIsNone(self.provider('%s_dev1' % self.hostname))
        self.assertIsNotNone(self.provider('%s_dev0' % self.hostname))

    def test_fresh_host_with_providers_in_placement_is_synced_whole(self):
        # A database restored from before the host: Placement has its
        # providers, one of them no longer wanted. Creating a wanted one
        # finds it there, and the whole tree is synced instead.
        old = [get_test_device(self.hostname, function=f) for f in range(2)]
        names = [self.hostname]
        placement_service.PlacementService(self.conf).sync.apply_tree(
            self.hostname, placement_sync.wanted_providers(
                (_Row('%s_dev%d' % (self.hostname, f), 16),
                 {'rc': 'FPGA', 'trait0': 'CUSTOM_FAKE_DEVICE'}, 0)
                for f in range(2)), names)
        self.assertIsNotNone(self.provider('%s_dev1' % self.hostname))
        self.assertEqual(1, len(self.report_listing(old[:1])))
        self.assertIsNone(self.provider('%s_dev1' % self.hostname))
        self.assertEqual({'FPGA': (16, 16)}, self.provider(
            '%s_dev0' % self.hostname)['inventories'])

    def test_device_notifications(self):
        self.messaging = self.useFixture(cyborg_fixtures.Messaging(
            self, self.conf))
        dev0 = '%s_dev0' % self.hostname
        dev1 = '%s_dev1' % self.hostname
        self.report([get_test_device(self.hostname),
                     get_test_device(self.hostname, function=1)])
        self.assertEqual([('added', '0', [dev0]), ('added', '1', [dev1])],
                         self.device_events())
        # Unchanged: nothing. Reprogrammed (new traits): changed.
        self.report([get_test_device(self.hostname),
                     get_test_device(self.hostname, function=1)])
        self.assertEqual([], self.device_events())
        self.report([get_test_device(self.hostname),
                     get_test_device(self.hostname, function=1,
                                     traits=('CUSTOM_FUNCTION_B',))])
        self.assertEqual([('changed', '1', [dev1])], self.device_events())
        self.report([get_test_device(self.hostname)])
        self.assertEqual([('removed', '1', [dev1])], self.device_events())

    def test_stub_devices_are_ignored(self):
        self.report([get_test_device(self.hostname, stub=True)])
        self.assertEqual([], self.rows(models.Device))

    def _more_hosts(self, count):
        self.roots = {}
        hosts = []
        for index in range(count):
            hostname = '%s-%d' % (self.hostname, index)
            db_hosts.record_hello(self.ctx, hostname, hostname, '1', [])
            self.roots[hostname] = self.placement.create_compute_node(
                hostname)['uuid']
            hosts.append(hostname)
        return hosts

    def test_syncs_recorded_together_only_where_still_current(self):
        self.report([get_test_device(self.hostname)])
        [other] = self._more_hosts(1)
        db_hosts.forget_sync(self.ctx, self.hostname)
        mine = self.state()
        theirs = db_hosts.get_report_state(self.ctx, other)
        del self.writes[:]
        # Theirs moved on (a newer report) since the sync began.
        self.assertEqual([True, False], db_hosts.mark_synced_many(
            self.ctx, [(mine.host_id, mine.generation),
                       (theirs.host_id, theirs.generation + 1)]))
        self.assertEqual(mine.generation, self.state().synced_generation)
        self.assertIsNone(db_hosts.get_report_state(
            self.ctx, other).synced_generation)
        self.assertEqual([('UPDATE', 'hosts')] * 2, self.tables_written())

    def _report_together(self, conductor, reports):
        """Run ``reports`` [(hostname, devices)] concurrently while the
        conductor's report batches are held, so they arrive together;
        returns {hostname: accepted hash or exception}."""
        gate, holding = threading.Event(), threading.Event()
        apply_batch = conductor.batches._apply_batch

        def held(items):
            if not holding.is_set():
                holding.set()
                gate.wait(30)
            return apply_batch(items)

        conductor.batches._apply_batch = held
        results = {}

        def one(hostname, devices):
            try:
                results[hostname] = conductor.report(
                    self.ctx, hostname, devices,
                    agent_reporter.report_hash(devices))
            except Exception as e:
                results[hostname] = e

        threads = [threading.Thread(target=one, args=report)
                   for report in reports]
        threads[0].start()
        self.assertTrue(holding.wait(30))
        for thread in threads[1:]:
            thread.start()
        test_hello.wait_for(
            lambda: len(conductor.batches._pending) == len(reports) - 1)
        gate.set()
        for thread in threads:
            thread.join(60)
        conductor.batches._apply_batch = apply_batch
        return results

    def test_reports_that_arrive_together_share_one_transaction(self):
        hosts = self._more_hosts(4)
        conductor = reporting.Reporting(self.conf)
        together = self.useFixture(fixtures.MockPatchObject(
            reporting, 'reconcile_many', wraps=reporting.reconcile_many))
        read = self.useFixture(fixtures.MockPatchObject(
            db_devices, 'get_providers_of',
            wraps=db_devices.get_providers_of))
        reports = [(self.hostname, [get_test_device(self.hostname)])] + [
            (h, [get_test_device(h, num=2 + i)]) for i, h in
            enumerate(hosts)] + [('nobody', [])]
        results = self._report_together(conductor, reports)
        for hostname, devices in reports[:-1]:
            self.assertEqual(agent_reporter.report_hash(devices),
                             results[hostname], hostname)
        self.assertIsInstance(results['nobody'], exception.HostNotFound)
        # The first ran alone; the five others came as one batch, whose
        # four known, changed reports were written in one transaction.
        self.assertEqual((2, 6), (conductor.batches.batches,
                                  conductor.batches.items))
        [call] = together.mock.call_args_list
        self.assertEqual(sorted(hosts),
                         sorted(hostname for hostname, *_rest in call[0][1]))
        # The batch's providers were read once for its four hosts.
        self.assertEqual([[self.hostname], sorted(hosts)], [
            sorted(c[0][1]) for c in read.mock.call_args_list])
        for index, hostname in enumerate(hosts):
            self.assertEqual(
                {'parent': self.roots[hostname],
                 'inventories': {'FPGA': (2 + index, 2 + index)},
                 'traits': {'CUSTOM_FAKE_DEVICE', 'OWNER_CYBORG'}},
                self.provider(hostname + '_dev0'))
        # Again, unchanged: one read for the batch, no write, no request.
        del self.writes[:]
        self.placement.requests()
        again = self._report_together(conductor, reports)
        self.assertEqual({h: results[h] for h, _d in reports[:-1]},
                         {h: again[h] for h, _d in reports[:-1]})
        self.assertEqual(1, together.mock.call_count)
        self.assertEqual([], self.writes)
        self.assertEqual([], self.placement.requests())

    def test_a_bad_report_in_a_batch_fails_alone(self):
        good = self._more_hosts(2)
        bad = self.hostname
        apply = reconciler.HostReconciler.apply

        def apply_or_fail(reconciler, devices):
            if reconciler.hostname == bad:
                raise ValueError('bad report')
            return apply(reconciler, devices)

        self.useFixture(fixtures.MockPatchObject(
            reconciler.HostReconciler, 'apply', apply_or_fail))
        conductor = reporting.Reporting(self.conf)
        reports = [(good[0], [get_test_device(good[0])]),
                   (bad, [get_test_device(bad)]),
                   (good[1], [get_test_device(good[1])])]
        results = self._report_together(conductor, reports)
        self.assertIsInstance(results[bad], ValueError)
        for hostname, devices in (reports[0], reports[2]):
            self.assertEqual(agent_reporter.report_hash(devices),
                             results[hostname])
            self.assertIsNotNone(self.provider(hostname + '_dev0'))
        self.assertIsNone(self.provider(bad + '_dev0'))

    def test_a_report_older_than_one_applied_is_refused(self):
        old = [get_test_device(self.hostname, num=2)]
        new = [get_test_device(self.hostname, num=5)]
        digest, accepted = self.report(new, seq=20)
        self.assertEqual(digest, accepted)
        # The older report, delivered late (through another conductor,
        # after its agent gave up waiting), changes nothing.
        _, accepted = self.report(old, seq=10)
        self.assertIsNone(accepted)
        self.assertEqual([5], [d.num_accelerators
                               for d in self.host_deployables()])
        self.assertTrue(self.state().shows(digest))
        self.assertEqual(20, self.state().report_seq)
        self.assertEqual({'FPGA': (5, 5)}, self.provider(
            '%s_dev0' % self.hostname)['inventories'])
        # A report without a sequence (an agent of an older release) is
        # applied as it comes.
        _, accepted = self.report(old)
        self.assertEqual([2], [d.num_accelerators
                               for d in self.host_deployables()])

    def test_a_shown_report_sent_again_moves_the_sequence_on(self):
        # The agent sent B (seq 20), gave up waiting, its hardware went
        # back to A, and it sent A again (seq 30), which the database
        # shows: answered at once. B, delivered after it, must not win.
        a = [get_test_device(self.hostname, num=2)]
        b = [get_test_device(self.hostname, num=5)]
        digest, _ = self.report(a, seq=10)
        _, accepted = self.report(a, seq=30)
        self.assertEqual(digest, accepted)
        self.assertEqual([('UPDATE', 'hosts')], self.tables_written())
        self.assertEqual([], self.placement.requests())
        self.assertEqual(30, self.state().report_seq)
        _, accepted = self.report(b, seq=20)
        self.assertIsNone(accepted)
        self.assertEqual([2], [d.num_accelerators
                               for d in self.host_deployables()])
        # The same report with the same sequence (a duplicate message):
        # no write at all.
        _, accepted = self.report(a, seq=30)
        self.assertEqual(digest, accepted)
        self.assertEqual([], self.writes)

    def test_of_two_reports_in_a_batch_the_higher_sequence_wins(self):
        conductor = reporting.Reporting(self.conf)
        old = [get_test_device(self.hostname, num=2)]
        new = [get_test_device(self.hostname, num=5)]
        outcomes = conductor._apply_batch([
            reporting.Report(self.ctx, self.hostname, new,
                             agent_reporter.report_hash(new), 20),
            reporting.Report(self.ctx, self.hostname, old,
                             agent_reporter.report_hash(old), 10)])
        self.assertEqual([reporting.ALONE, reporting.Done(None)], outcomes)

    def test_of_two_reports_of_a_host_in_a_batch_the_newer_wins(self):
        conductor = reporting.Reporting(self.conf)
        old = [get_test_device(self.hostname, num=2)]
        new = [get_test_device(self.hostname, num=5)]
        outcomes = conductor._apply_batch([
            reporting.Report(self.ctx, self.hostname, old,
                             agent_reporter.report_hash(old)),
            reporting.Report(self.ctx, self.hostname, new,
                             agent_reporter.report_hash(new))])
        # The older is answered "not accepted"; the newer is applied by
        # its own caller (it is the batch's only changed report).
        self.assertEqual([reporting.Done(None), reporting.ALONE], outcomes)
        self.assertEqual([], self.writes)

    def test_devices_go_under_the_provider_the_agent_names(self):
        # Nova named the compute node after the fully qualified name; the
        # agent's host is short.
        fqdn = '%s.example.org' % self.hostname
        db_hosts.record_hello(self.ctx, self.hostname, self.hostname, '1',
                              [], resource_provider_name=fqdn)
        named = self.placement.create_compute_node(fqdn)
        digest, accepted = self.report([get_test_device(self.hostname)])
        self.assertEqual(digest, accepted)
        self.assertEqual(named['uuid'], self.provider(
            '%s_dev0' % self.hostname)['parent'])

    def test_hostname_when_the_named_provider_does_not_exist(self):
        db_hosts.record_hello(
            self.ctx, self.hostname, self.hostname, '1', [],
            resource_provider_name='%s.example.org' % self.hostname)
        digest, accepted = self.report([get_test_device(self.hostname)])
        self.assertEqual(digest, accepted)
        self.assertEqual(self.root['uuid'], self.provider(
            '%s_dev0' % self.hostname)['parent'])

    def test_hardware_list_is_kept_with_the_report(self):
        devices = [get_test_device(self.hostname)]
        gpu = get_test_function()
        nic = get_test_function(
            '0000:18:00.0', vendor_id='8086', product_id='1572',
            name='Intel Corporation Ethernet Controller X710 for 10GbE SFP+',
            kernel_driver='i40e', driver='intel_nic_driver',
            reason='the host runs it', action='map it')
        digest, accepted = self.report(devices, 1, [gpu, nic])
        self.assertEqual(digest, accepted)
        rows = db_hardware.get_all(self.ctx, self.hostname)
        self.assertEqual([('0000:18:00.0', 'intel_nic_driver', False),
                          ('0000:3b:00.0', 'nvidia_gpu_driver', False)],
                         [(r['address'], r['driver'], r['offered'])
                          for r in rows])
        self.assertEqual(dict(host=self.hostname, **{
            c: getattr(gpu, c) for c in db_hardware.COLUMNS}), rows[1])
        # A decision that changed alone: the rows change, nothing else.
        generation = self.state().generation
        offered = get_test_function(offered=True, kernel_driver='vfio-pci')
        digest, accepted = self.report(devices, 2, [offered, nic])
        self.assertEqual(digest, accepted)
        self.assertEqual(generation, self.state().generation)
        self.assertEqual([], self.placement.requests())
        self.assertEqual([('UPDATE', 'host_hardware'), ('UPDATE', 'hosts')],
                         self.tables_written())
        self.assertEqual([('0000:3b:00.0', True)], [
            (r['address'], r['offered'])
            for r in db_hardware.get_all(self.ctx, offered=True)
            if r['host'] == self.hostname])
        # The same report again writes nothing.
        self.report(devices, 3, [offered, nic])
        self.assertEqual([('UPDATE', 'hosts')], self.tables_written())
        # A function no longer seen goes.
        self.report(devices, 4, [nic])
        self.assertEqual(['0000:18:00.0'], [
            r['address'] for r in db_hardware.get_all(self.ctx,
                                                      self.hostname)])

    def test_a_function_without_a_name_is_kept_unnamed(self):
        # An agent of the previous release sends HardwareFunction 1.0.
        old = get_test_function()
        del old.name
        self.report([get_test_device(self.hostname)], 1, [old])
        [row] = db_hardware.get_all(self.ctx, self.hostname)
        self.assertEqual(('1eb8', None), (row['product_id'], row['name']))

    def test_a_report_without_hardware_keeps_the_list(self):
        devices = [get_test_device(self.hostname)]
        self.report(devices, 1, [get_test_function()])
        self.report(devices + [get_test_device(self.hostname, 1)], 2)
        self.assertEqual(1, len(db_hardware.get_all(self.ctx,
                                                    self.hostname)))

    def test_hardware_of_an_unknown_host_is_not_found(self):
        self.assertRaises(exception.HostNotFound, db_hardware.get_all,
                          self.ctx, 'nobody')

    def test_unknown_host_is_refused(self):
        self.assertRaises(exception.HostNotFound,
                          reporting.Reporting(self.conf).report,
                          self.ctx, 'nobody', [], 'x')


class ReportingSQLiteTest(_ReportingTests, base.TestCase):
    db = 'sqlite'


class ReportingMySQLTest(_ReportingTests, base.TestCase):
    db = 'mysql'


class ReportingPostgreSQLTest(_ReportingTests, base.TestCase):
    db = 'postgresql'


class AgentReportsTest(base.TestCase):
    """A real agent with the fake driver and a real conductor, over
    in-process messaging, bring the device into the database and
    Placement; the next ticks send heartbeats only."""

    def setUp(self):
        super().setUp()
        self.placement = placement_fixture.in_process_stack(self)
        self.flags(heartbeat_interval=1, group='agent')
        self.flags(enabled_drivers=['fake_driver'], group='agent')
        self.ctx = context.get_admin_context()

    def _start(self, manager, topic, host):
        return cyborg_fixtures.start_rpc_service(self, manager, topic, host)

    def assert_fake_device_under(self, root, name):
        """The fake driver's deployable ``name`` is in Placement under
        compute node ``root``, with its 16 FPGAs."""
        rp_uuid = placement_sync.provider_uuid(name)
        status, body = self.placement.get('/resource_providers/%s' % rp_uuid)
        self.assertEqual((200, root['uuid']),
                         (status, body['parent_provider_uuid']))
        _, inventories = self.placement.get(
            '/resource_providers/%s/inventories' % rp_uuid)
        self.assertEqual(16, inventories['inventories']['FPGA']['total'])

    def test_agent_reports_fake_device(self):
        host = 'e2e-%s' % uuid.uuid4().hex[:12]
        root = self.placement.create_compute_node(host)
        self._start(conductor_manager.ConductorManager('cond', self.conf),
                    rpc.CONDUCTOR_TOPIC, 'cond')
        self.flags(host=host)
        agent = self._start(agent_manager.AgentManager(host, self.conf),
                            rpc.AGENT_TOPIC, host).manager
        test_hello.wait_for(lambda: agent.reporter.accepted_hash)
        name = host + '_FakeDevice'
        self.assert_fake_device_under(root, name)
        with db_api.reader.using(self.ctx) as session:
            self.assertEqual([name], [d.name for d in session.query(
                models.Deployable)])
            self.assertEqual(agent.reporter.accepted_hash, session.query(
                models.Host).filter_by(hostname=host).one().report_hash)

    def test_agent_reports_under_its_named_compute_node(self):
        # Nova named the compute node provider after the hypervisor's
        # fully qualified name; the agent's [DEFAULT] host is short.
        root = self.placement.create_compute_node('cmp-1.example.org',
                                                  remove_after=True)
        self.flags(resource_provider_name='cmp-1.example.org',
                   group='agent')
        self._start(conductor_manager.ConductorManager('cond', self.conf),
                    rpc.CONDUCTOR_TOPIC, 'cond')
        self.flags(host='cmp-1')
        agent = self._start(agent_manager.AgentManager('cmp-1', self.conf),
                            rpc.AGENT_TOPIC, 'cmp-1').manager
        test_hello.wait_for(lambda: agent.reporter.accepted_hash)
        self.assertEqual('cmp-1.example.org', db_hosts.get_by_hostname(
            self.ctx, 'cmp-1')[0].resource_provider_name)
        self.assert_fake_device_under(root, 'cmp-1_FakeDevice')
