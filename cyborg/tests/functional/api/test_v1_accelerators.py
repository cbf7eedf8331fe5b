"""``/v1/accelerators`` (the seed's Pike API proposal) through the API,
against a real conductor, real agents with the fake driver, a real
database and a real Placement. Every status code the proposal names is
checked here."""

import datetime
import json
import uuid

import fixtures
from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from cyborg.accelerator.drivers.fake import driver as fake_driver
from cyborg.agent import manager as agent_manager
from cyborg.common import rpc
from cyborg.conductor import placement_sync
from cyborg.db import accelerators as db_accelerators
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import test_deployables
from cyborg.tests.functional import test_reporting

PATH = '/v1/accelerators'
INSTANCE = '2b6f1c3e-4d5a-4b6c-8d7e-9f0a1b2c3d4e'


class AcceleratorsTest(test_deployables.Inventory,
                       base.APIResourceTestCase):
    """A host with the fake driver's one card, served by a real agent."""

    def setUp(self):
        super().setUp()
        self.host = 'host-%s' % uuid.uuid4().hex[:12]
        self.flags(host=self.host)
        self.seed(fake_driver.FakeDriver(self.conf).discover(), self.host)
        self.agent = agent_manager.AgentManager(self.host, self.conf)
        cyborg_fixtures.start_rpc_service(self, self.agent, rpc.AGENT_TOPIC,
                                          self.host)
        self.driver = self.agent.drivers['fake_driver']

    def card_removed(self):
        """The card leaves the host: the running agent finds nothing
        and reports it. A report of the agent's own (its hello, a
        heartbeat) may be under way; the agent sends one report at a
        time, so once this one is back every later one is empty too."""
        self.useFixture(fixtures.MockPatchObject(self.driver, 'discover',
                                                 return_value=[]))
        self.agent.reporter.report(self.context)

    def create(self, name, expect=201, **body):
        response = self.post(PATH, dict(body, name=name))
        self.assertEqual(expect, response.status_int, response.body)
        return response

    def created(self, name, **body):
        location = self.create(name, **body).headers['Location']
        return self.get(location).json

    def reserved(self, accelerator):
        deployable = self.rows(models.Deployable,
                               uuid=accelerator['deployable_uuid'])[0]
        rp_uuid = placement_sync.provider_uuid(deployable.name)
        _, body = self.placement.get(
            '/resource_providers/%s/inventories' % rp_uuid)
        [inventory] = body['inventories'].values()
        return inventory['reserved'], inventory['total']

    # GET

    def provisioned(self):
        """The accelerators of the list, without the hardware entries."""
        return [a for a in self.get(PATH).json['accelerators']
                if a['uuid'] != a['deployable_uuid']]

    def card(self):
        """The fake card's entry in the list."""
        [card] = [a for a in self.get(PATH).json['accelerators']
                  if a['uuid'] == a['deployable_uuid']]
        return card

    def test_discovered_card_is_listed(self):
        response = self.get(PATH)
        self.assertEqual(200, response.status_int)
        [deployable] = self.rows(models.Deployable)
        [device] = self.rows(models.Device)
        location = 'http://localhost/v1/accelerators/%s' % deployable.uuid
        card = {
            'uuid': deployable.uuid, 'name': deployable.name,
            'state': 'ready', 'host': self.host,
            'device_uuid': device.uuid, 'deployable_uuid': deployable.uuid,
            'instance_uuid': None, 'attached_host': None,
            'spec_version': None, 'free': 16,
            'acc_specs': {'remote': 0, 'num': 16, 'device_type': 'FPGA',
                          'acc_capability': {
                              'resource_class': 'FPGA',
                              'traits': ['CUSTOM_FAKE_DEVICE']}},
            'links': [{'rel': 'self', 'href': location}]}
        [listed] = response.json['accelerators']
        strip = ('created_at', 'updated_at')
        self.assertEqual(card, {k: v for k, v in listed.items()
                                if k not in strip})
        shown = self.get(location)
        self.assertEqual(200, shown.status_int, shown.body)
        self.assertEqual(listed, shown.json)
        # It is hardware: attach, detach and spec changes want an
        # accelerator provisioned from it.
        for method, path, body in (
                ('PUT', location, {}), ('DELETE', location, None),
                ('PUT', location + '/acc_specs', {'acc_specs': {}})):
            self.assert_error(self.request(method, path, body), 409,
                              'POST /v1/accelerators')
        self.create('one')
        self.assertEqual(15, self.card()['free'])

    def test_show_unknown_and_bad_uuid(self):
        self.assert_error(self.get('%s/%s' % (PATH, uuid.uuid4())), 404,
                          'could not be found')
        self.assert_error(self.get('%s/not-a-uuid' % PATH), 400,
                          'not-a-uuid')

    # POST: provisioning goes conductor -> agent -> driver

    def test_create_provisions_through_the_agent(self):
        response = self.create('IPSec Card')
        self.assertEqual(b'', response.body)
        location = response.headers['Location']
        self.assertTrue(location.startswith('http://localhost/v1/'
                                            'accelerators/'), location)
        accelerator = self.get(location).json
        row = self.rows(models.Deployable,
                        uuid=accelerator['deployable_uuid'])[0]
        host = accelerator['host']
        self.assertEqual(self.host, host)
        self.assertEqual({
            'uuid': location.rsplit('/', 1)[1], 'name': 'IPSec Card',
            'state': 'available', 'host': host,
            'deployable_uuid': row.uuid, 'instance_uuid': None,
            'attached_host': None, 'spec_version': 1,
            'acc_specs': {'remote': 0, 'num': 1, 'device_type': 'FPGA',
                          'acc_capability': {
                              'resource_class': 'FPGA',
                              'traits': ['CUSTOM_FAKE_DEVICE']}},
            'links': [{'rel': 'self', 'href': location}]},
            {k: v for k, v in accelerator.items()
             if k not in ('created_at', 'updated_at', 'device_uuid')})
        self.assertEqual({json.dumps(fake_driver.PCI_ADDRESS,
                                     sort_keys=True)}, self.driver.set_up)
        self.assertEqual([accelerator], self.provisioned())

    def test_create_with_uuid_in_body(self):
        first = str(uuid.uuid4())
        self.assertEqual(first, self.created('a', uuid=first)['uuid'])

    def test_create_with_uuid_in_path(self):
        second = str(uuid.uuid4())
        response = self.post('%s/%s' % (PATH, second), {'name': 'b'})
        self.assertEqual(201, response.status_int, response.body)
        self.assertEqual(second, self.get(response.headers['Location'])
                         .json['uuid'])

    def test_create_bad_bodies_are_400(self):
        for body, text in [
                ({}, "'name' is a required property"),
                ({'name': 'x', 'vendor': 'y'}, 'Additional properties'),
                ({'name': 'x', 'uuid': 'nope'}, "is not a 'uuid'"),
                ({'name': 7}, 'name: expected a string'),
                ([{'name': 'x'}], 'expected an object with name')]:
            self.assert_error(self.post(PATH, body), 400, text)
        self.assert_error(
            self.post('%s/%s' % (PATH, uuid.uuid4()),
                      {'name': 'x', 'uuid': str(uuid.uuid4())}),
            400, 'not the one in the path')
        self.assertEqual([], self.provisioned())

    def test_create_conflicts_are_409(self):
        taken = str(uuid.uuid4())
        self.create('one', uuid=taken)
        self.assert_error(self.post(PATH, {'name': 'one'}), 409,
                          'already exists')
        self.assert_error(self.post(PATH, {'name': 'x', 'uuid': taken}),
                          409, 'already exists')
        # The card's uuid names its hardware entry.
        self.assert_error(self.post(PATH, {
            'name': 'x', 'uuid': self.card()['uuid']}), 409, 'already exists')
        # The card has 16 accelerators: 15 more, then it is exhausted.
        for number in range(2, 17):
            self.create('acc-%d' % number)
        self.assertEqual(0, self.card()['free'])
        self.assert_error(self.post(PATH, {'name': 'seventeen'}), 409,
                          'hardware is exhausted')
        self.assert_error(self.post(PATH, {'name': 'seventeen'}), 409,
                          'All 16 units')
        units = sorted(row.unit for row in self.rows(models.Accelerator))
        self.assertEqual(list(range(16)), units)

    def test_failed_setup_is_a_502_and_frees_the_name(self):
        # The driver's setup step breaks (set_up cannot be added to).
        self.driver.set_up = None
        response = self.post(PATH, {'name': 'doomed'})
        self.assert_error(response, 502, 'Provisioning accelerator doomed')
        self.assertEqual([], self.provisioned())
        self.driver.set_up = set()
        self.create('doomed')

    def test_unready_hardware_is_not_provisioned(self):
        with db_api.writer.using(self.context) as session:
            session.query(models.Device).update({'status': 'maintaining'})
        self.assert_error(self.post(PATH, {'name': 'x'}), 409,
                          '16 more are on devices not ready yet')
        self.assertEqual('inactive', self.card()['state'])

    def test_stale_claims_expire(self):
        self.create('stuck')
        with db_api.writer.using(self.context) as session:
            # As a claim a conductor left: never updated since created.
            session.query(models.Accelerator).update({
                'state': 'provisioning', 'updated_at': None,
                'created_at': timeutils.utcnow() -
                datetime.timedelta(hours=1)})
        self.conductor.accelerators.expire_claims(self.context)
        self.assertEqual([], self.provisioned())
        self.create('stuck')

    def test_attached_deployable_is_kept_when_no_longer_reported(self):
        accelerator = self.created('kept')
        path = '%s/%s' % (PATH, accelerator['uuid'])
        self.request('PUT', path, {'instance_uuid': INSTANCE})
        attached = self.get(path).json
        self.card_removed()
        self.assertEqual(attached, self.get(path).json)

    def test_gone_deployable_leaves_the_accelerator_unavailable(self):
        accelerator = self.created('orphan')
        path = '%s/%s' % (PATH, accelerator['uuid'])
        self.card_removed()
        shown = self.get(path).json
        self.assertEqual(('unavailable', None, None),
                         (shown['state'], shown['deployable_uuid'],
                          shown['host']))
        self.assertEqual([], self.rows(models.Deployable))
        self.assert_error(self.request('PUT', path, {
            'instance_uuid': INSTANCE}), 409, 'it is unavailable')

    def test_one_accelerator_per_unit(self):
        accelerator = self.created('first')
        [deployable] = self.rows(models.Deployable,
                                 uuid=accelerator['deployable_uuid'])
        [first] = self.rows(models.Accelerator)
        self.assertEqual(0, first.unit)

        def add(name, unit):
            with db_api.writer.using(self.context) as session:
                session.add(models.Accelerator(
                    uuid=str(uuid.uuid4()), name=name, unit=unit,
                    deployable_id=deployable.id, state='available'))
        add('second', 1)
        self.assertRaises(db_exc.DBDuplicateEntry, add, 'third', 1)

    def test_two_creates_for_the_last_unit(self):
        """Two requests read the last unit free: the unique constraint
        lets the first to write win; the other, retrying, sees the card
        exhausted."""
        for number in range(16):
            self.create('acc-%d' % number)
        [deployable] = self.rows(models.Deployable)
        [device] = self.rows(models.Device)
        real = db_accelerators._free_unit
        calls = []

        def read_before_the_winner_committed(context):
            calls.append(real(context))
            return (deployable, device, 15) if len(calls) == 1 else calls[-1]
        self.useFixture(fixtures.MockPatchObject(
            db_accelerators, '_free_unit', read_before_the_winner_committed))
        self.assert_error(self.post(PATH, {'name': 'loser'}), 409,
                          'hardware is exhausted')
        self.assertEqual([None, None], calls)
        self.assertEqual(16, len(self.rows(models.Accelerator)))
        # A unit taken under a request that still finds one free: it
        # retries and gets that one.
        self.delete_row('acc-3')
        calls.clear()
        self.create('retried')
        self.assertEqual(2, len(calls))
        [row] = self.rows(models.Accelerator, name='retried')
        self.assertEqual(3, row.unit)

    def delete_row(self, name):
        with db_api.writer.using(self.context) as session:
            session.query(models.Accelerator).filter_by(name=name).delete()

    # PUT {uuid}/acc_specs: optimistic concurrency

    def test_update_spec(self):
        accelerator = self.created('spec')
        path = '%s/%s/acc_specs' % (PATH, accelerator['uuid'])
        capability = {'num': 2, 'ipsec': {'aes': {'3des': 50, 'num': 1}}}
        response = self.request('PUT', path, {'acc_specs': {
            'remote': 1, 'num': 1, 'device_type': 'FPGA',
            'acc_capability': capability}})
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual('"2"', response.headers['ETag'])
        self.assertEqual(2, response.json['spec_version'])
        self.assertEqual({'remote': 1, 'num': 1, 'device_type': 'FPGA',
                          'acc_capability': capability},
                         response.json['acc_specs'])
        # The singular segment of the proposal works too.
        response = self.request(
            'PUT', '%s/%s/acc_spec' % (PATH, accelerator['uuid']),
            {'acc_specs': {'remote': 0}, 'spec_version': 2})
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual(3, response.json['spec_version'])
        self.assertEqual(capability,
                         response.json['acc_specs']['acc_capability'])

    def test_update_spec_based_on_an_old_version_is_409(self):
        accelerator = self.created('spec')
        path = '%s/%s/acc_specs' % (PATH, accelerator['uuid'])
        etag = self.get('%s/%s' % (PATH, accelerator['uuid'])).headers[
            'ETag']
        body = {'acc_specs': {'remote': 1}}
        first = self.request('PUT', path, body,
                             headers=dict(base.ADMIN, **{'If-Match': etag}))
        self.assertEqual(200, first.status_int, first.body)
        # A second writer that read the same version loses.
        self.assert_error(self.request(
            'PUT', path, body, headers=dict(base.ADMIN, **{'If-Match': etag})),
            409, 'someone changed it first')
        self.assert_error(self.request(
            'PUT', path, dict(body, spec_version=1)), 409, 'version 1')
        self.assertEqual(2, self.get('%s/%s' % (
            PATH, accelerator['uuid'])).json['spec_version'])

    def test_update_spec_errors(self):
        accelerator = self.created('spec')
        path = '%s/%s/acc_specs' % (PATH, accelerator['uuid'])
        for body, text in [
                ({}, "'acc_specs' is a required property"),
                ({'acc_specs': {'colour': 'red'}}, 'Additional properties'),
                ({'acc_specs': {'remote': 2}}, 'is not one of'),
                ({'acc_specs': {'num': 3}}, 'num is what the hardware has'),
                ({'acc_specs': {'device_type': 'GPU'}},
                 'device_type is what the hardware has')]:
            self.assert_error(self.request('PUT', path, body), 400, text)
        self.assert_error(self.request(
            'PUT', path, {'acc_specs': {}},
            headers=dict(base.ADMIN, **{'If-Match': 'yesterday'})), 400,
            'If-Match')
        self.assert_error(self.request(
            'PUT', '%s/%s/acc_specs' % (PATH, uuid.uuid4()),
            {'acc_specs': {}}), 404, 'could not be found')
        self.assert_error(self.request(
            'PUT', '%s/%s/other' % (PATH, accelerator['uuid']),
            {'acc_specs': {}}), 404)

    # PUT {uuid}: attach; DELETE {uuid}: detach

    def test_attach_to_an_instance_and_detach(self):
        accelerator = self.created('gpu-for-vm')
        path = '%s/%s' % (PATH, accelerator['uuid'])
        self.assertEqual((0, 16), self.reserved(accelerator))
        response = self.request('PUT', path, {
            'instance_uuid': INSTANCE, 'name': 'gpu-for-vm',
            'uuid': accelerator['uuid']})
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual(('attached', INSTANCE, None), (
            response.json['state'], response.json['instance_uuid'],
            response.json['attached_host']))
        # Placement offers an attached accelerator's unit to no one else.
        self.assertEqual((1, 16), self.reserved(accelerator))
        self.assert_error(self.request('PUT', path, {
            'instance_uuid': str(uuid.uuid4())}), 409, 'it is attached')
        response = self.delete(path)
        self.assertEqual(204, response.status_int, response.body)
        self.assertEqual(b'', response.body)
        self.assertEqual('available', self.get(path).json['state'])
        self.assertEqual((0, 16), self.reserved(accelerator))
        self.assert_error(self.delete(path), 409, 'is not attached')

    def test_only_admins_see_what_an_accelerator_is_attached_to(self):
        attached = self.created('to-vm')
        self.request('PUT', '%s/%s' % (PATH, attached['uuid']),
                     {'instance_uuid': INSTANCE})
        on_host = self.created('to-host')
        self.request('PUT', '%s/%s' % (PATH, on_host['uuid']),
                     {'host': on_host['host']})

        def seen(headers):
            views = self.get(PATH, headers=headers).json['accelerators']
            views += [self.get('%s/%s' % (PATH, a['uuid']),
                               headers=headers).json
                      for a in (attached, on_host)]
            return {(v['name'], v['instance_uuid'], v['attached_host'])
                    for v in views if v['uuid'] != v['deployable_uuid']}

        self.assertEqual({('to-vm', INSTANCE, None),
                          ('to-host', None, on_host['host'])},
                         seen(base.ADMIN))
        # A project manager reads the accelerators, not other projects'
        # instances and hosts.
        self.assertEqual({('to-vm', None, None), ('to-host', None, None)},
                         seen(base.MANAGER))

    def test_attach_to_a_host(self):
        accelerator = self.created('local')
        path = '%s/%s' % (PATH, accelerator['uuid'])
        other = 'storage-rack-7'
        self.assert_error(self.request('PUT', path, {'host': other}), 400,
                          'not remotable')
        response = self.request('PUT', path, {'host': accelerator['host']})
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual(accelerator['host'], response.json['attached_host'])
        # Once remotable, any host may have it.
        self.delete(path)
        self.request('PUT', path + '/acc_specs', {'acc_specs': {'remote': 1}})
        response = self.request('PUT', path, {'host': other})
        self.assertEqual(200, response.status_int, response.body)

    def test_attach_errors(self):
        accelerator = self.created('acc')
        path = '%s/%s' % (PATH, accelerator['uuid'])
        for body, text in [
                ({'instance_uuid': INSTANCE, 'host': 'h'}, 'not both'),
                ({'instance_uuid': 'nope'}, "is not a 'uuid'"),
                ({'host': 'h', 'size': 1}, 'Additional properties')]:
            self.assert_error(self.request('PUT', path, body), 400, text)
        self.assert_error(self.request(
            'PUT', path, {'instance_uuid': INSTANCE, 'name': 'other'}), 400,
            'name in the body')
        self.assert_error(self.request(
            'PUT', '%s/%s' % (PATH, uuid.uuid4()),
            {'instance_uuid': INSTANCE}), 404, 'could not be found')
        self.assert_error(self.delete('%s/%s' % (PATH, uuid.uuid4())), 404,
                          'could not be found')
        self.assertEqual('available', self.get(path).json['state'])

    def test_placement_allocations_block_attach_and_detach(self):
        accelerator = self.created('busy')
        path = '%s/%s' % (PATH, accelerator['uuid'])
        [deployable] = self.rows(models.Deployable,
                                 uuid=accelerator['deployable_uuid'])
        rp_uuid = placement_sync.provider_uuid(deployable.name)
        consumer = str(uuid.uuid4())

        def allocate(amount):
            response = self.placement.client.put(
                '/allocations/%s' % consumer, microversion='1.28', json={
                    'allocations': {rp_uuid: {'resources': {
                        'FPGA': amount}}},
                    'project_id': base.PROJECT, 'user_id': 'u',
                    'consumer_generation': None}, raise_exc=False)
            self.assertEqual(204, response.status_code, response.text)

        def release():
            self.placement.client.delete('/allocations/%s' % consumer,
                                         microversion='1.28')

        # Nova uses 15 of the 16 units: one is left to attach.
        allocate(15)
        self.assertEqual(200, self.request(
            'PUT', path, {'instance_uuid': INSTANCE}).status_int)
        self.assertEqual((1, 16), self.reserved(accelerator))
        self.assertEqual(204, self.delete(path).status_int)
        release()
        # Nova uses all 16: nothing is left.
        allocate(16)
        self.assert_error(self.request('PUT', path, {
            'instance_uuid': INSTANCE}), 409, consumer)
        release()
        self.assertEqual(200, self.request(
            'PUT', path, {'instance_uuid': INSTANCE}).status_int)
        # Someone allocates its unit anyway (with the reservation
        # lifted behind our back): detaching is refused while the card
        # is overcommitted.
        with db_api.writer.using(self.context) as session:
            session.query(models.Accelerator).update({'state': 'available'})
        self.conductor.devices.placement.resync_host(self.context, self.host)
        allocate(16)
        with db_api.writer.using(self.context) as session:
            session.query(models.Accelerator).update({'state': 'attached'})
        self.assert_error(self.delete(path), 409, consumer)
        self.assertEqual('attached', self.get(path).json['state'])
        release()
        self.assertEqual(204, self.delete(path).status_int)

    def test_singular_paths_of_the_proposal(self):
        accelerator = self.created('singular')
        path = '/v1/accelerator/%s' % accelerator['uuid']
        self.assertEqual(200, self.request(
            'PUT', path, {'instance_uuid': INSTANCE}).status_int)
        self.assertEqual(204, self.delete(path).status_int)

    def test_the_proposals_examples_verbatim(self):
        """The API proposal's requests with its own bodies, in its
        order, give its status codes."""
        uuid_ = '8e45a2ea-5364-4b0d-a252-bf8becaa606e'
        body = {'name': 'IPSec Card', 'uuid': uuid_}
        # GET /accelerators: what the agent discovered is there.
        listed = self.get('/v1/accelerators')
        self.assertEqual(200, listed.status_int)
        self.assertEqual(['ready'], [a['state'] for a in
                                     listed.json['accelerators']])
        # POST /accelerators/{uuid}: 201, empty body, Location.
        response = self.post('/v1/accelerators/%s' % uuid_, body)
        self.assertEqual(201, response.status_int, response.body)
        self.assertEqual(b'', response.body)
        self.assertTrue(response.headers['Location'].endswith(
            '/v1/accelerators/%s' % uuid_))
        # ... 409 for a name that exists.
        self.assert_error(self.post('/v1/accelerators', {
            'name': 'IPSec Card'}), 409, 'already exists')
        # ... and another name gets another of the card's accelerators.
        self.create('Second Card')
        # GET /accelerators/{uuid}: 200, 404 for an unknown one.
        self.assertEqual(200, self.get('/v1/accelerators/%s' %
                                       uuid_).status_int)
        self.assert_error(self.get('/v1/accelerators/%s' % uuid.uuid4()),
                          404, 'could not be found')
        # PUT /accelerator/{uuid} (the example's singular path) with the
        # example's body attaches to the host it is on: 200, then 409.
        response = self.request('PUT', '/v1/accelerator/%s' % uuid_, body)
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual(('attached', self.host, None), (
            response.json['state'], response.json['attached_host'],
            response.json['instance_uuid']))
        self.assert_error(self.request('PUT', '/v1/accelerator/%s' % uuid_,
                                       body), 409, 'it is attached')
        self.assert_error(self.request(
            'PUT', '/v1/accelerator/%s' % uuid.uuid4(),
            dict(body, uuid=str(uuid.uuid4()))), 404, 'could not be found')
        # DELETE /accelerator/{uuid}: 204, empty body; 404 unknown.
        response = self.delete('/v1/accelerator/%s' % uuid_)
        self.assertEqual(204, response.status_int, response.body)
        self.assertEqual(b'', response.body)
        self.assert_error(self.delete('/v1/accelerator/%s' % uuid.uuid4()),
                          404, 'could not be found')
        # Attach again after the detach: 200.
        response = self.request('PUT', '/v1/accelerators/%s' % uuid_, body)
        self.assertEqual(200, response.status_int, response.body)
        # PUT /accelerators/{uuid}/{acc_spec} with the example's spec
        # (its num and device_type are what the hardware has).
        spec = {'acc_specs': {
            'remote': 0, 'num': 1, 'device_type': 'FPGA',
            'acc_capability': {'num': 2, 'ipsec': {
                'aes': {'3des': 50, 'num': 1}}}}}
        response = self.request('PUT', '/v1/accelerator/%s/acc_spec' % uuid_,
                                spec)
        self.assertEqual(200, response.status_int, response.body)
        self.assert_error(self.request(
            'PUT', '/v1/accelerator/%s/acc_spec' % uuid_,
            dict(spec, spec_version=1)), 409, 'version 1')

    def test_policy(self):
        accelerator = self.created('acc')
        path = '%s/%s' % (PATH, accelerator['uuid'])
        for headers in (base.MEMBER, base.READER):
            self.assert_error(self.get(PATH, headers=headers), 403)
            self.assert_error(self.post(PATH, {'name': 'x'},
                                        headers=headers), 403)
        self.assertEqual(200, self.get(path, headers=base.MANAGER).status_int)
        for method, body in (('PUT', {'instance_uuid': INSTANCE}),
                             ('DELETE', None)):
            self.assert_error(self.request(method, path, body,
                                           headers=base.MANAGER), 403)
        self.assert_error(self.request(
            'PUT', path + '/acc_specs', {'acc_specs': {}},
            headers=base.MANAGER), 403)

    def test_methods_not_allowed(self):
        self.assertEqual(405, self.request('PATCH', PATH).status_int)
        self.assertEqual(405, self.request('DELETE', PATH).status_int)

    def test_version_documents(self):
        response = self.get('/v1', headers={})
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual('v1.0', response.json['id'])
        versions = self.get('/', headers={}).json['versions']
        self.assertEqual(['v2', 'v1'], [v['id'] for v in versions])


class AcceleratorsOnNamedComputeNodeTest(test_deployables.Inventory,
                                         base.APIResourceTestCase):
    """Nova named the compute node provider ``cmp-1.example.org``; the
    agent's host is ``cmp-1`` and names the provider in its hello."""

    def setUp(self):
        super().setUp()
        self.seed_under_named_compute_node()
        agent = agent_manager.AgentManager('cmp-1', self.conf)
        cyborg_fixtures.start_rpc_service(self, agent, rpc.AGENT_TOPIC,
                                          'cmp-1')

    def inventory(self, accelerator):
        """(parent uuid, reserved, total) of its deployable's provider."""
        deployable = self.rows(models.Deployable,
                               uuid=accelerator['deployable_uuid'])[0]
        rp_uuid = placement_sync.provider_uuid(deployable.name)
        _, provider = self.placement.get('/resource_providers/%s' % rp_uuid)
        _, body = self.placement.get(
            '/resource_providers/%s/inventories' % rp_uuid)
        [inventory] = body['inventories'].values()
        return (provider['parent_provider_uuid'], inventory['reserved'],
                inventory['total'])

    def test_attach_and_detach_reserve_under_it(self):
        response = self.post(PATH, {'name': 'gpu-for-vm'})
        self.assertEqual(201, response.status_int, response.body)
        path = response.headers['Location']
        accelerator = self.get(path).json
        self.assertEqual('cmp-1', accelerator['host'])
        root = self.compute_node['uuid']
        self.assertEqual((root, 0, 16), self.inventory(accelerator))
        response = self.request('PUT', path, {'instance_uuid': INSTANCE})
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual((root, 1, 16), self.inventory(accelerator))
        self.assertEqual(204, self.delete(path).status_int)
        self.assertEqual((root, 0, 16), self.inventory(accelerator))


class AcceleratorsReportTest(test_deployables.Inventory,
                             base.APIResourceTestCase):
    """The fake driver's card seen as another driver's: setup fails."""

    def test_setup_failure_names_the_reason(self):
        hostname = 'host-%s' % uuid.uuid4().hex[:12]
        self.flags(host=hostname)
        self.seed([test_reporting.get_test_device(hostname, function=3)],
                  hostname)
        agent = agent_manager.AgentManager(hostname, self.conf)
        cyborg_fixtures.start_rpc_service(self, agent, rpc.AGENT_TOPIC,
                                          hostname)
        self.assert_error(self.post(PATH, {'name': 'x'}), 502,
                          'no fake card')
        with db_api.reader.using(self.context) as session:
            self.assertEqual(0, session.scalar(
                sa.select(sa.func.count()).select_from(models.Accelerator)))
