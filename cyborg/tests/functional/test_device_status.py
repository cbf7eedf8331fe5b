"""Disabling a device reserves its inventory in the real Placement; a
later report keeps the reservation; enabling releases it; a Placement
outage is caught up by the periodic retry. Optionally, a host that is
down has all of its inventory reserved."""

import datetime
import uuid

from oslo_utils import timeutils

from cyborg.accelerator.drivers.fake import driver as fake_driver
from cyborg.agent import reporter as agent_reporter
from cyborg.common import context
from cyborg.common import exception
from cyborg.conductor import devices as conductor_devices
from cyborg.conductor import liveness
from cyborg.conductor import placement_sync
from cyborg.conductor import reporting
from cyborg.db import api as db_api
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import placement_fixture


class _HostWithFakeCard(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self))
        self.placement = self.useFixture(
            placement_fixture.Placement(self.conf))
        self.ctx = context.get_admin_context()
        self.hostname = 'host-%s' % uuid.uuid4().hex[:12]
        self.flags(host=self.hostname)
        db_hosts.record_hello(self.ctx, self.hostname, self.hostname, '1',
                              [])
        self.placement.create_compute_node(self.hostname)
        self.devices = fake_driver.FakeDriver(self.conf).discover()
        self.report()
        with db_api.reader.using(self.ctx) as session:
            self.device_uuid = session.query(models.Device.uuid).one()[0]
            name = session.query(models.Deployable.name).one()[0]
        self.rp_uuid = placement_sync.provider_uuid(name)
        self.status = conductor_devices.Devices(self.conf)

    def report(self):
        digest = agent_reporter.report_hash(self.devices)
        return reporting.Reporting(self.conf).report(
            self.ctx, self.hostname, self.devices, digest)

    def inventory(self):
        _code, body = self.placement.get(
            '/resource_providers/%s/inventories' % self.rp_uuid)
        return body['inventories']['FPGA']


class DeviceStatusTest(_HostWithFakeCard):

    def test_disable_reserves_and_enable_releases(self):
        self.assertEqual(0, self.inventory()['reserved'])
        self.status.set_status(self.ctx, self.device_uuid, 'maintaining')
        self.assertEqual(16, self.inventory()['reserved'])
        self.assertEqual(16, self.inventory()['total'])
        # A changed report (another function) keeps the reservation.
        self.devices[0].deployable_list[0].num_accelerators = 15
        self.report()
        self.assertEqual(15, self.inventory()['reserved'])
        self.status.set_status(self.ctx, self.device_uuid, 'enabled')
        self.assertEqual(0, self.inventory()['reserved'])

    def test_bad_status_and_unknown_device(self):
        self.assertRaises(exception.InvalidParameterValue,
                          self.status.set_status, self.ctx, self.device_uuid,
                          'broken')
        self.assertRaises(exception.DeviceNotFound, self.status.set_status,
                          self.ctx, str(uuid.uuid4()), 'enabled')

    def test_placement_outage_is_caught_up(self):
        with self.placement.down():
            self.status.set_status(self.ctx, self.device_uuid, 'maintaining')
            self.assertEqual([self.hostname],
                             db_hosts.sync_pending_hosts(self.ctx))
        self.assertEqual(0, self.inventory()['reserved'])
        self.status.placement.retry_pending(self.ctx)
        self.assertEqual(16, self.inventory()['reserved'])
        self.assertEqual([], db_hosts.sync_pending_hosts(self.ctx))


class DownHostReservationTest(_HostWithFakeCard):
    """``[conductor] reserve_down_hosts``: a host marked down has its
    inventory reserved until it is heard from again."""

    def go_silent(self):
        with db_api.writer.using(self.ctx) as session:
            session.query(models.Host).filter_by(
                hostname=self.hostname).update({
                    'last_seen_at': timeutils.utcnow() -
                    datetime.timedelta(hours=1)})

    def liveness(self):
        return liveness.Liveness(
            self.conf, on_status_change=self.status.host_status_changed)

    def heartbeat(self):
        """A heartbeat, written as its conductor's next flush writes it."""
        liveness = self.liveness()
        liveness.heartbeat(self.ctx, self.hostname)
        liveness.flush_heartbeats(self.ctx)

    def test_down_host_is_reserved_until_it_comes_back(self):
        self.flags(reserve_down_hosts=True, group='conductor')
        self.go_silent()
        self.liveness().check_hosts()
        self.assertEqual('down', db_hosts.get_by_hostname(
            self.ctx, self.hostname)[0].status)
        self.assertEqual(16, self.inventory()['reserved'])
        self.heartbeat()
        self.assertEqual(0, self.inventory()['reserved'])

    def test_a_disabled_device_stays_reserved_when_its_host_returns(self):
        self.flags(reserve_down_hosts=True, group='conductor')
        self.status.set_status(self.ctx, self.device_uuid, 'maintaining')
        self.go_silent()
        self.liveness().check_hosts()
        self.heartbeat()
        self.assertEqual(16, self.inventory()['reserved'])

    def test_off_by_default(self):
        self.go_silent()
        self.liveness().check_hosts()
        self.assertEqual('down', db_hosts.get_by_hostname(
            self.ctx, self.hostname)[0].status)
        self.assertEqual(0, self.inventory()['reserved'])
