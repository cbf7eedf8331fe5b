"""``[agent] new_device_state``: with ``inactive``, a device found for
the first time is offered to no one until an operator enables it, and
enabling it runs its driver's setup step on its host (the seed's
operator flow); with the default ``ready`` it is offered at once."""

import json
import uuid

from cyborg.accelerator.drivers.fake import driver as fake_driver
from cyborg.agent import manager as agent_manager
from cyborg.common import rpc
from cyborg.conductor import placement_sync
from cyborg.db import models
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import test_deployables

CARD = json.dumps(fake_driver.PCI_ADDRESS, sort_keys=True)


class NewDeviceStateTest(test_deployables.Inventory,
                         base.APIResourceTestCase):

    def start(self, state):
        self.flags(new_device_state=state, group='agent')
        self.host = 'host-%s' % uuid.uuid4().hex[:12]
        self.flags(host=self.host)
        self.seed(fake_driver.FakeDriver(self.conf).discover(), self.host)
        self.agent = agent_manager.AgentManager(self.host, self.conf)
        cyborg_fixtures.start_rpc_service(self, self.agent, rpc.AGENT_TOPIC,
                                          self.host)
        [self.device] = self.rows(models.Device)

    def reserved(self):
        rp_uuid = placement_sync.provider_uuid('%s_FakeDevice' % self.host)
        _, body = self.placement.get(
            '/resource_providers/%s/inventories' % rp_uuid)
        [inventory] = body['inventories'].values()
        return inventory['reserved']

    def test_ready_by_default(self):
        self.start('ready')
        self.assertEqual('enabled', self.device.status)
        self.assertEqual(0, self.reserved())

    def test_inactive_until_enabled_then_set_up(self):
        self.start('inactive')
        self.assertEqual('maintaining', self.device.status)
        self.assertEqual(16, self.reserved())
        driver = self.agent.drivers['fake_driver']
        self.assertEqual(set(), driver.set_up)
        response = self.post('/v2/devices/%s/enable' % self.device.uuid)
        self.assertEqual(204, response.status_int, response.body)
        self.assertEqual({CARD}, driver.set_up)
        self.assertEqual('enabled', self.rows(models.Device)[0].status)
        self.assertEqual(0, self.reserved())

    def test_failed_setup_leaves_it_inactive(self):
        self.start('inactive')
        self.agent.drivers['fake_driver'].set_up = None
        self.assert_error(self.post('/v2/devices/%s/enable' %
                                    self.device.uuid), 502,
                          'Setting up device %s' % self.device.uuid)
        self.assertEqual('maintaining', self.rows(models.Device)[0].status)
        self.assertEqual(16, self.reserved())
