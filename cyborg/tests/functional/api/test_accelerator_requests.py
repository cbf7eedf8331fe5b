"""``/v2/accelerator_requests`` through the API and a real conductor, on
a real database, with the fake driver's card as inventory and a stand-in
Nova on a loopback port that records the external events it receives."""

import concurrent.futures
import threading
import uuid as uuidlib

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import service_token
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_utils import timeutils
from oslo_utils import uuidutils

from cyborg.accelerator.drivers.fake import driver as fake_driver
from cyborg.api import server as api_server
from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.common import states
from cyborg.conductor import binding
from cyborg.conductor import reporting
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import api as db_api
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.tests.functional.api import base
from cyborg.tests.functional import nova

PATH = '/v2/accelerator_requests'
PROFILE = 'fpga-1'
GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}
NOVA_USER = dict(base.MEMBER)


class ARQSetup:
    """A host with the fake driver's card, a profile, a stand-in Nova;
    helpers to create and bind ARQs."""

    def setUp(self):
        super().setUp()
        self.nova = nova.StandInNova().start(self)
        self.conf.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group='nova')
        self.flags(group='nova', **self.nova.config())
        self.hostname = 'host-%s' % uuidlib.uuid4().hex[:8]
        self.rp_uuid = self.seed_inventory(self.hostname)
        response = self.post('/v2/device_profiles',
                             [{'name': PROFILE, 'groups': [GROUP]}])
        self.assertEqual(201, response.status_int, response.body)

    def seed_inventory(self, hostname):
        """The fake card (16 functions) of ``hostname``, as reported."""
        self.flags(host=hostname)
        devices = fake_driver.FakeDriver(self.conf).discover()
        db_hosts.record_hello(self.context, hostname, hostname, '1', [])
        reporting.reconcile(self.context, hostname, devices, 'h')
        with db_api.reader.using(self.context) as session:
            return session.query(models.Deployable.rp_uuid).one()[0]

    def create(self, headers=NOVA_USER, profile=PROFILE):
        response = self.post(PATH, {'device_profile_name': profile},
                             headers=headers)
        self.assertEqual(201, response.status_int, response.body)
        return response.json['arqs']

    def bind_patch(self, arqs, instance, rp_uuid=None):
        return {arq['uuid']: [
            {'op': 'add', 'path': '/hostname', 'value': self.hostname},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': rp_uuid or self.rp_uuid},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
            for arq in arqs}

    def bind(self, arqs, instance=None, **kwargs):
        instance = instance or uuidutils.generate_uuid()
        response = self.patch(PATH, self.bind_patch(arqs, instance, **kwargs),
                              headers=NOVA_USER, service=True)
        return instance, response

    def told(self):
        """Once the conductor tried to send the events of the binds it
        committed (it sends them after the bind returns)."""
        self.assertTrue(self.conductor.binding.events.wait_idle(30))


class _ARQTests(ARQSetup):

    def test_create_show_list(self):
        arqs = self.create()
        self.assertEqual(1, len(arqs))
        arq = arqs[0]
        self.assertEqual(states.INITIAL, arq['state'])
        self.assertEqual(PROFILE, arq['device_profile_name'])
        self.assertEqual(0, arq['device_profile_group_id'])
        self.assertEqual(base.PROJECT, arq['project_id'])
        self.assertEqual('', arq['attach_handle_type'])
        self.assertEqual({}, arq['attach_handle_info'])
        shown = self.get(PATH + '/' + arq['uuid'], headers=NOVA_USER)
        self.assertEqual(arq, shown.json)
        self.assertEqual([arq], self.get(PATH, headers=NOVA_USER).json[
            'arqs'])

    def test_nova_boot_sequence(self):
        arqs = self.create()
        instance, response = self.bind(arqs)
        self.assertEqual(202, response.status_int, response.body)
        resolved = self.get(PATH, headers=NOVA_USER, service=True,
                            instance=instance, bind_state='resolved')
        self.assertEqual(200, resolved.status_int, resolved.body)
        [arq] = resolved.json['arqs']
        self.assertEqual(states.BOUND, arq['state'])
        self.assertEqual('TEST_PCI', arq['attach_handle_type'])
        self.assertEqual('0c', arq['attach_handle_info']['bus'])
        self.told()
        self.assertEqual([{'name': 'accelerator-request-bound',
                           'server_uuid': instance, 'tag': arq['uuid'],
                           'status': 'completed'}], self.nova.events)
        response = self.delete(PATH, headers=NOVA_USER, service=True,
                               instance=instance)
        self.assertEqual(204, response.status_int, response.body)
        self.assertEqual([], self.get(PATH, headers=NOVA_USER).json['arqs'])
        with db_api.reader.using(self.context) as session:
            self.assertEqual(0, session.query(models.AttachHandle).filter_by(
                in_use=True).count())

    def serve_api(self):
        """The API on a loopback port; its endpoint."""
        server = api_server.WSGIServer(self.app, '127.0.0.1', 0, 4,
                                       name='cyborg-api')
        server.start()
        self.addCleanup(server.stop)
        return 'http://127.0.0.1:%d' % server.port

    def test_nova_boot_sequence_with_keystoneauth_service_token(self):
        # Nova's session: the user's token wrapped with its own service
        # token, sent over HTTP as keystoneauth sends them (X-Auth-Token
        # and X-Service-Token, no identity headers).
        endpoint = self.serve_api()
        user_token = 'alice:%s' % base.PROJECT
        user = ks_adapter.Adapter(ks_session.Session(
            auth=token_endpoint.Token(endpoint, user_token)),
            service_type='accelerator')
        nova_session = ks_adapter.Adapter(ks_session.Session(
            auth=service_token.ServiceTokenAuthWrapper(
                user_auth=token_endpoint.Token(endpoint, user_token),
                service_auth=token_endpoint.Token(endpoint, 'nova'))),
            service_type='accelerator')
        arqs = user.post(PATH, json={'device_profile_name': PROFILE},
                         raise_exc=False)
        self.assertEqual(201, arqs.status_code, arqs.text)
        arqs = arqs.json()['arqs']
        instance = uuidutils.generate_uuid()
        patch = self.bind_patch(arqs, instance)
        refused = user.patch(PATH, json=patch, raise_exc=False)
        self.assertEqual(403, refused.status_code, refused.text)
        bound = nova_session.patch(PATH, json=patch, raise_exc=False)
        self.assertEqual(202, bound.status_code, bound.text)
        [arq] = nova_session.get(
            PATH, params={'instance': instance, 'bind_state': 'resolved'},
            raise_exc=False).json()['arqs']
        self.assertEqual(states.BOUND, arq['state'])
        self.assertEqual(base.PROJECT, arq['project_id'])
        refused = user.delete(PATH, params={'instance': instance},
                              raise_exc=False)
        self.assertEqual(403, refused.status_code, refused.text)
        deleted = nova_session.delete(PATH, params={'instance': instance},
                                      raise_exc=False)
        self.assertEqual(204, deleted.status_code, deleted.text)
        self.assertEqual([], user.get(PATH).json()['arqs'])

    def test_binding_twice_is_409(self):
        arqs = self.create()
        _instance, response = self.bind(arqs)
        self.assertEqual(202, response.status_int)
        response = self.patch(PATH, self.bind_patch(
            arqs, uuidutils.generate_uuid()), headers=NOVA_USER,
            service=True)
        self.assert_error(response, 409, states.BOUND)

    def test_concurrent_binds_of_one_arq_one_wins(self):
        arqs = self.create()

        def bind(_):
            return self.bind(arqs)[1].status_int

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            results = sorted(pool.map(bind, range(2)))
        self.assertIn(202, results)
        self.assertEqual(1, results.count(202), results)

    def test_binding_an_instance_that_has_arqs_is_400(self):
        first, second = self.create(), self.create()
        instance, response = self.bind(first)
        self.assertEqual(202, response.status_int, response.body)
        _instance, response = self.bind(second, instance=instance)
        self.assertEqual('Instance %s already has accelerator requests.'
                         % instance,
                         self.assert_error(response, 400))
        self.assertEqual(states.INITIAL, self.get(
            PATH + '/' + second[0]['uuid']).json['state'])

    def test_binding_on_another_host_than_the_providers_is_400(self):
        arqs = self.create()
        patch = self.bind_patch(arqs, uuidutils.generate_uuid())
        patch[arqs[0]['uuid']][0]['value'] = 'other-host'
        response = self.patch(PATH, patch, headers=NOVA_USER, service=True)
        message = self.assert_error(response, 400)
        self.assertIn('cannot be bound on host other-host', message)
        self.assertIn('device of host %s' % self.hostname, message)
        arq = self.get(PATH + '/' + arqs[0]['uuid']).json
        self.assertEqual((states.INITIAL, None),
                         (arq['state'], arq['hostname']))
        # The provider's own host binds.
        _instance, response = self.bind(arqs)
        self.assertEqual(202, response.status_int, response.body)

    def bind_as(self, name, rp_uuid=None):
        """A bind of new ARQs on host ``name``: the response."""
        arqs = self.create()
        patch = self.bind_patch(arqs, uuidutils.generate_uuid(), rp_uuid)
        patch[arqs[0]['uuid']][0]['value'] = name
        return self.patch(PATH, patch, headers=NOVA_USER, service=True)

    def seed_host(self, hostname, resource_provider_name=None):
        """Another host with the fake card: its provider's uuid."""
        self.flags(host=hostname)
        devices = fake_driver.FakeDriver(self.conf).discover()
        db_hosts.record_hello(self.context, hostname, hostname, '1', [],
                              resource_provider_name)
        reporting.reconcile(self.context, hostname, devices, 'h')
        with db_api.reader.using(self.context) as session:
            return session.query(models.Deployable.rp_uuid).join(
                models.Device).filter(
                    models.Device.hostname == hostname).one()[0]

    def test_binding_under_the_provider_name_of_the_host(self):
        # nova-compute's host is the FQDN, the agent's the short name
        # and [agent] resource_provider_name the FQDN.
        fqdn = self.hostname + '.example.org'
        db_hosts.record_hello(self.context, self.hostname, self.hostname,
                              '1', [], fqdn)
        response = self.bind_as(fqdn)
        self.assertEqual(202, response.status_int, response.body)
        message = self.assert_error(self.bind_as('other-host'), 400)
        self.assertIn('whose names are %s, %s.' % (self.hostname, fqdn),
                      message)

    def test_binding_under_the_short_form_of_the_hosts_name(self):
        short = 'cmp-%s' % uuidlib.uuid4().hex[:8]
        fqdn = short + '.example.org'
        rp_uuid = self.seed_host(fqdn)
        response = self.bind_as(short, rp_uuid)
        self.assertEqual(202, response.status_int, response.body)
        # Once another host may be named so, the short form is refused,
        # and that host's own name always.
        db_hosts.record_hello(self.context, short + '.lab.org',
                              'endpoint', '1', [])
        message = self.assert_error(self.bind_as(short, rp_uuid), 400)
        self.assertIn('whose names are %s; %s may also name host '
                      '%s.lab.org.' % (fqdn, short, short), message)
        message = self.assert_error(
            self.bind_as(short + '.lab.org', rp_uuid), 400)
        self.assertIn('; %s.lab.org is another host.' % short, message)

    def test_the_agent_of_a_device_bound_under_another_name(self):
        # Bound under Nova's name, the ARQ's device is still asked about
        # (mdevs, reports) on its agent's host.
        fqdn = self.hostname + '.example.org'
        db_hosts.record_hello(self.context, self.hostname, self.hostname,
                              '1', [], fqdn)
        [arq] = self.create()
        _instance, response = self.bind([arq])
        self.assertEqual(202, response.status_int, response.body)
        [arq2] = self.create()
        patch = self.bind_patch([arq2], uuidutils.generate_uuid())
        patch[arq2['uuid']][0]['value'] = fqdn
        response = self.patch(PATH, patch, headers=NOVA_USER, service=True)
        self.assertEqual(202, response.status_int, response.body)
        views = db_arqs.get_many(self.context, [arq['uuid'], arq2['uuid']])
        self.assertEqual([(self.hostname, self.hostname),
                          (fqdn, self.hostname)],
                         [(v.hostname, v.agent_host) for v in views])
        self.assertEqual([self.hostname, self.hostname],
                         [binding.agent_host(v) for v in views])
        # Were their handles mdevs, the agent's hello would find both.
        with db_api.writer.using(self.context) as session:
            session.query(models.AttachHandle).filter(
                models.AttachHandle.id.in_([v.attach_handle_id
                                            for v in views])).update(
                {'attach_type': 'MDEV'}, synchronize_session=False)
        self.assertEqual(
            sorted([arq['uuid'], arq2['uuid']]),
            sorted(v.uuid for v in db_arqs.bound_mdevs(self.context,
                                                       self.hostname)))
        self.assertEqual([], db_arqs.bound_mdevs(self.context, fqdn))

    def bind_values(self, arqs, instance):
        return {arq['uuid']: {'hostname': self.hostname,
                              'device_rp_uuid': self.rp_uuid,
                              'instance_uuid': instance,
                              'project_id': base.PROJECT} for arq in arqs}

    def test_conductor_refuses_a_second_bind_of_an_instance(self):
        instance = uuidutils.generate_uuid()
        first, second = self.create(), self.create()
        apply_patch = self.conductor.binding.apply_patch
        apply_patch(self.context, self.bind_values(first, instance), None)
        error = self.assertRaises(
            exception.InstanceHasARQs, apply_patch, self.context,
            self.bind_values(second, instance), None)
        self.assertEqual(400, error.code)
        self.assertEqual(states.INITIAL,
                         db_arqs.get(self.context, second[0]['uuid']).state)
        # attach-instance adds ARQs to an instance: it may.
        apply_patch(self.context, self.bind_values(second, instance), None,
                    new_instances_only=False)
        self.assertEqual(states.BOUND,
                         db_arqs.get(self.context, second[0]['uuid']).state)

    def test_an_instance_with_arqs_is_400_before_an_arq_state(self):
        # The new ARQ comes first: it is written before the bound one
        # is refused, and the answer is still the instance's 400.
        instance = uuidutils.generate_uuid()
        first, second = self.create(), self.create()
        apply_patch = self.conductor.binding.apply_patch
        apply_patch(self.context, self.bind_values(first, instance), None)
        both = dict(self.bind_values(second, instance),
                    **self.bind_values(first, instance))
        self.assertEqual([second[0]['uuid'], first[0]['uuid']], list(both))
        self.assertRaises(exception.InstanceHasARQs, apply_patch,
                          self.context, both, None)
        self.assertEqual(states.INITIAL,
                         db_arqs.get(self.context, second[0]['uuid']).state)

    def test_a_bound_arq_in_a_new_instances_bind_is_409(self):
        # The ARQ written first does not count as the instance's own.
        bound, fresh = self.create(), self.create()
        apply_patch = self.conductor.binding.apply_patch
        apply_patch(self.context,
                    self.bind_values(bound, uuidutils.generate_uuid()), None)
        instance = uuidutils.generate_uuid()
        both = dict(self.bind_values(fresh, instance),
                    **self.bind_values(bound, instance))
        error = self.assertRaises(exception.ARQBadState, apply_patch,
                                  self.context, both, None)
        self.assertEqual(409, error.code)
        self.assertEqual(states.INITIAL,
                         db_arqs.get(self.context, fresh[0]['uuid']).state)

    def test_a_bind_waits_for_one_of_the_same_instance(self):
        """The rule is checked in the bind's transaction: a bind for an
        instance whose other bind is written but not committed waits
        for it, then is refused."""
        instance = uuidutils.generate_uuid()
        first, second = self.create(), self.create()
        written, release = threading.Event(), threading.Event()

        def first_bind():
            ctx = cyborg_context.get_admin_context()
            with db_api.writer.using(ctx):
                db_arqs.bind(ctx, self.bind_values(first, instance), None,
                             'one', binding._ready)
                written.set()
                release.wait(30)

        thread = threading.Thread(target=first_bind)
        thread.start()
        self.addCleanup(thread.join, 30)
        self.addCleanup(release.set)
        self.assertTrue(written.wait(30))
        # Committed only after the second bind had time to get past a
        # check that would not wait.
        threading.Timer(0.5, release.set).start()
        self.assertRaises(exception.InstanceHasARQs, db_arqs.bind,
                          self.context, self.bind_values(second, instance),
                          None, 'two', binding._ready)
        thread.join(30)
        self.assertEqual(states.BOUND,
                         db_arqs.get(self.context, first[0]['uuid']).state)

    def test_no_free_handle_fails_the_bind_and_tells_nova(self):
        with db_api.writer.using(self.context) as session:
            session.query(models.AttachHandle).update({'in_use': True})
        arqs = self.create()
        instance, response = self.bind(arqs)
        self.assertEqual(202, response.status_int)
        [arq] = self.get(PATH, headers=NOVA_USER, instance=instance,
                         bind_state='resolved').json['arqs']
        self.assertEqual(states.BIND_FAILED, arq['state'])
        self.told()
        self.assertEqual(['failed'], [e['status'] for e in self.nova.events])
        # It holds no device: its owner deletes it without Nova's token.
        response = self.delete(PATH + '/' + arq['uuid'], headers=NOVA_USER)
        self.assertEqual(204, response.status_int, response.body)

    def test_unknown_provider_is_refused_at_once(self):
        """Nova binds to the provider Placement allocated; one that no
        deployable has is a 400 naming it, and nothing changes."""
        unknown = uuidutils.generate_uuid()
        arqs = self.create()
        _instance, response = self.bind(arqs, rp_uuid=unknown)
        self.assert_error(response, 400, 'Resource provider %s '
                          '(device_rp_uuid of accelerator request %s) is not '
                          'the provider of any deployable cyborg knows.'
                          % (unknown, arqs[0]['uuid']))
        shown = self.get(PATH + '/' + arqs[0]['uuid']).json
        self.assertEqual((states.INITIAL, None),
                         (shown['state'], shown['instance_uuid']))
        self.told()
        self.assertEqual([], self.nova.events)

    def test_unresolved_instance_is_423(self):
        arqs = self.create()
        instance = uuidutils.generate_uuid()
        db_arqs.start_binds(self.context, {arqs[0]['uuid']: {
            'hostname': 'h', 'device_rp_uuid': self.rp_uuid,
            'instance_uuid': instance, 'project_id': base.PROJECT}},
            None, 'elsewhere')
        response = self.get(PATH, headers=NOVA_USER, instance=instance,
                            bind_state='resolved')
        self.assertEqual(423, response.status_int)
        self.assert_error(self.get(PATH, bind_state='bound'), 400)

    def test_unbind_releases_and_rebind(self):
        arqs = self.create()
        self.bind(arqs)
        remove = {arqs[0]['uuid']: [{'op': 'remove',
                                     'path': '/instance_uuid'}]}
        self.assert_error(self.patch(PATH, remove, headers=NOVA_USER), 403)
        response = self.patch(PATH, remove, headers=NOVA_USER, service=True)
        self.assertEqual(202, response.status_int, response.body)
        arq = self.get(PATH + '/' + arqs[0]['uuid']).json
        self.assertEqual(states.UNBOUND, arq['state'])
        self.assertIsNone(arq['instance_uuid'])
        _instance, response = self.bind(arqs)
        self.assertEqual(202, response.status_int, response.body)

    def test_patch_errors(self):
        arqs = self.create()
        uuid = arqs[0]['uuid']
        add = self.bind_patch(arqs, uuidutils.generate_uuid())
        cases = [
            ({}, 400), ([], 400), ({'not-a-uuid': add[uuid]}, 400),
            ({uuid: []}, 400),
            ({uuid: [{'op': 'replace', 'path': '/hostname', 'value': 'x'}]},
             400),
            ({uuid: add[uuid][:2]}, 400),
            ({uuid: add[uuid] + [{'op': 'add', 'path': '/state',
                                  'value': 'Bound'}]}, 400),
            ({uuid: add[uuid] + [{'op': 'remove', 'path': '/hostname'}]},
             400),
            ({uuid: add[uuid] + [{'op': 'add', 'path': '/project_id',
                                  'value': 'p'}]}, 406),
            ({uuidutils.generate_uuid(): add[uuid]}, 404),
        ]
        for body, status in cases:
            self.assert_error(self.patch(PATH, body, headers=NOVA_USER,
                                         service=True), status)
        # /project_id at 2.1 is for administrators only.
        body = {uuid: add[uuid] + [{'op': 'add', 'path': '/project_id',
                                    'value': 'p'}]}
        self.assert_error(self.patch(PATH, body, headers=NOVA_USER,
                                     service=True, version='2.1'), 403)
        # A bind needs a service token.
        self.assert_error(self.patch(PATH, add, headers=NOVA_USER), 403)
        self.assertEqual(states.INITIAL, self.get(
            PATH + '/' + uuid).json['state'])

    def test_create_errors(self):
        for body in ({}, {'device_profile_name': 7}, [], 'x'):
            self.assert_error(self.post(PATH, body, headers=NOVA_USER), 400)
        for name in ('nope', ''):
            self.assert_error(self.post(PATH, {'device_profile_name': name},
                                        headers=NOVA_USER), 404)
        self.assert_error(self.post(PATH, {'device_profile_name': PROFILE},
                                    headers=base.READER), 403)

    def test_a_marker_of_another_projects_arq_is_unknown(self):
        [arq] = self.create()
        random = str(uuidlib.uuid4())
        unknown = self.assert_error(self.get(
            PATH, headers=base.OTHER, version='2.4', marker=random), 400)
        foreign = self.assert_error(self.get(
            PATH, headers=base.OTHER, version='2.4', marker=arq['uuid']),
            400)
        self.assertEqual(unknown.replace(random, arq['uuid']), foreign)
        # Its own project pages from it.
        self.assertEqual(200, self.get(PATH, headers=NOVA_USER,
                                       version='2.4',
                                       marker=arq['uuid']).status_int)

    def test_other_projects_arqs_are_404(self):
        [arq] = self.create()
        self.assert_error(self.get(PATH + '/' + arq['uuid'],
                                   headers=base.OTHER), 404)
        self.assertEqual([], self.get(PATH, headers=base.OTHER).json['arqs'])
        self.assert_error(self.delete(PATH, headers=base.OTHER,
                                      arqs=arq['uuid']), 404)
        self.assertEqual(200, self.get(PATH + '/' + arq['uuid'],
                                       headers=base.ADMIN).status_int)

    def test_delete_errors_and_all_or_nothing(self):
        first, second = self.create()[0], self.create()[0]
        self.assert_error(self.delete(PATH), 400)
        self.assert_error(self.delete(PATH, arqs=first['uuid'],
                                      instance=uuidutils.generate_uuid()),
                          400)
        self.assert_error(self.delete(PATH, arqs='nope'), 400)
        self.assert_error(self.delete(PATH, headers=NOVA_USER,
                                      instance=uuidutils.generate_uuid()),
                          403)
        missing = uuidutils.generate_uuid()
        self.assert_error(self.delete(PATH, headers=NOVA_USER, arqs='%s,%s'
                                      % (first['uuid'], missing)), 404)
        self.assertEqual(2, len(self.get(PATH).json['arqs']))
        self.bind([second])
        self.assert_error(self.delete(PATH, headers=NOVA_USER,
                                      arqs=second['uuid']), 403)
        response = self.delete(PATH, headers=NOVA_USER, service=True,
                               arqs='%s,%s' % (first['uuid'],
                                               second['uuid']))
        self.assertEqual(204, response.status_int, response.body)
        self.assertEqual([], self.get(PATH).json['arqs'])
        # Deleting an instance's ARQs again is fine (Nova retries).
        self.assertEqual(204, self.delete(
            PATH, headers=NOVA_USER, service=True,
            instance=uuidutils.generate_uuid()).status_int)

    def test_patch_one_arq(self):
        """``PATCH /{uuid}`` (openstacksdk, ``openstack accelerator arq
        bind/unbind``) binds and unbinds like the collection's PATCH."""
        first, second = self.create()[0], self.create()[0]
        one = PATH + '/' + first['uuid']
        add = self.bind_patch([first, second], uuidutils.generate_uuid())
        remove = {first['uuid']: [{'op': 'remove', 'path': '/hostname'}]}
        for body in ({second['uuid']: add[second['uuid']]}, add, {}):
            self.assert_error(self.patch(one, body, headers=NOVA_USER,
                                         service=True), 400)
        self.assert_error(self.patch(PATH + '/nope', remove,
                                     headers=NOVA_USER, service=True), 400)
        missing = uuidutils.generate_uuid()
        self.assert_error(self.patch(
            PATH + '/' + missing, {missing: add[first['uuid']]},
            headers=NOVA_USER, service=True), 404)
        bind = {first['uuid']: add[first['uuid']]}
        self.assert_error(self.patch(one, bind, headers=NOVA_USER), 403,
                          'service')
        self.assert_error(self.patch(one, bind, headers=base.OTHER,
                                     service=True), 404)
        self.assertEqual(states.INITIAL, self.get(one).json['state'])
        response = self.patch(one, bind, headers=NOVA_USER, service=True)
        self.assertEqual(202, response.status_int, response.body)
        self.assertEqual(b'', response.body)
        self.assertEqual(states.BOUND, self.get(one).json['state'])
        self.assertEqual(states.INITIAL, self.get(
            PATH + '/' + second['uuid']).json['state'])
        self.assert_error(self.patch(one, remove, headers=NOVA_USER), 403)
        self.assert_error(self.patch(one, remove, headers=base.OTHER,
                                     service=True), 404)
        response = self.patch(one, remove, headers=NOVA_USER, service=True)
        self.assertEqual(202, response.status_int, response.body)
        self.assertEqual(states.UNBOUND, self.get(one).json['state'])

    def test_delete_one_arq(self):
        """``DELETE /{uuid}`` (openstacksdk, ``openstack accelerator arq
        delete``) is ``DELETE ?arqs=<uuid>``."""
        unbound, bound = self.create()[0], self.create()[0]
        self.bind([bound])
        self.assert_error(self.delete(PATH + '/nope'), 400)
        self.assert_error(self.delete(
            PATH + '/' + uuidutils.generate_uuid()), 404)
        for arq in (unbound, bound):
            self.assert_error(self.delete(PATH + '/' + arq['uuid'],
                                          headers=base.OTHER), 404)
        self.assert_error(
            self.delete(PATH + '/' + bound['uuid'], headers=NOVA_USER), 403,
            'Accelerator request %s is Bound for instance %s; deleting it '
            'needs a service token' % (bound['uuid'], self.get(
                PATH + '/' + bound['uuid']).json['instance_uuid']))
        self.assertEqual(2, len(self.get(PATH).json['arqs']))
        response = self.delete(PATH + '/' + unbound['uuid'],
                               headers=NOVA_USER)
        self.assertEqual(204, response.status_int, response.body)
        response = self.delete(PATH + '/' + bound['uuid'],
                               headers=NOVA_USER, service=True)
        self.assertEqual(204, response.status_int, response.body)
        self.assertEqual([], self.get(PATH).json['arqs'])
        self.assert_error(self.delete(PATH + '/' + unbound['uuid'],
                                      headers=NOVA_USER), 404)
        with db_api.reader.using(self.context) as session:
            self.assertEqual(0, session.query(models.AttachHandle).filter_by(
                in_use=True).count())

    def test_conductor_restart_fails_its_unfinished_binds(self):
        [arq] = self.create()
        instance = uuidutils.generate_uuid()
        # A bind whose device is still being prepared: BindStarted, with
        # its attach handle.
        claims, failed = db_arqs.bind(self.context, {arq['uuid']: {
            'hostname': self.hostname, 'device_rp_uuid': self.rp_uuid,
            'instance_uuid': instance, 'project_id': base.PROJECT}},
            None, self.conf.host, lambda _arq, _handle: False)
        self.assertEqual(([arq['uuid']], []),
                         ([c.arq.uuid for c in claims], failed))
        # The conductor "died" here; a new one starts on the same host.
        binding.Binding(self.conf).recover(self.context)
        shown = self.get(PATH + '/' + arq['uuid']).json
        self.assertEqual(states.BIND_FAILED, shown['state'])
        self.assertEqual([(instance, arq['uuid'], 'failed')],
                         [(e['server_uuid'], e['tag'], e['status'])
                          for e in self.nova.events])
        with db_api.reader.using(self.context) as session:
            self.assertEqual(0, session.query(models.AttachHandle).filter_by(
                in_use=True).count())

    def test_periodic_check_fails_stale_binds_of_others(self):
        [arq] = self.create()
        db_arqs.start_binds(self.context, {arq['uuid']: {
            'hostname': self.hostname, 'device_rp_uuid': self.rp_uuid,
            'instance_uuid': uuidutils.generate_uuid(),
            'project_id': base.PROJECT}}, None, 'another-conductor')
        checker = binding.Binding(self.conf)
        checker.check(self.context)
        self.assertEqual(states.BIND_STARTED, self.get(
            PATH + '/' + arq['uuid']).json['state'])
        timeutils.set_time_override(
            timeutils.utcnow() + binding.BIND_TIMEOUT * 2)
        self.addCleanup(timeutils.clear_time_override)
        checker.check(self.context)
        self.assertEqual(states.BIND_FAILED, self.get(
            PATH + '/' + arq['uuid']).json['state'])
        self.assertEqual(['failed'], [e['status'] for e in self.nova.events])

    def test_nova_down_then_back_gets_its_event(self):
        self.nova.status = 500
        arqs = self.create()
        instance, response = self.bind(arqs)
        self.assertEqual(202, response.status_int)
        self.told()
        self.assertEqual(1, len(self.nova.events))
        self.nova.status = 207  # every event 422: delivered as far as can be
        binding.Binding(self.conf).check(self.context)
        self.assertEqual(2, len(self.nova.events))
        binding.Binding(self.conf).check(self.context)
        self.assertEqual(2, len(self.nova.events), 'sent once delivered')
        self.assertEqual({instance}, {e['server_uuid']
                                      for e in self.nova.events})

    def test_events_of_deleted_instances_are_not_sent_again(self):
        for status, code in ((404, None), (207, 404), (207, 400)):
            self.nova.status, self.nova.event_code = status, code
            del self.nova.events[:]
            instance, response = self.bind(self.create())
            self.assertEqual(202, response.status_int)
            self.told()
            binding.Binding(self.conf).check(self.context)
            binding.Binding(self.conf).check(self.context)
            # An instance Nova does not have is not sent again; an event
            # Nova refused for another reason is.
            self.assertEqual(3 if code == 400 else 1,
                             len(self.nova.events_of(instance)),
                             (status, code))

    def test_paging_at_2_4(self):
        made = [self.create()[0]['uuid'] for _ in range(5)]
        page = self.get(PATH, version='2.4', limit=2).json
        seen = [a['uuid'] for a in page['arqs']]
        while 'next' in page:
            page = self.get(page['next'].replace('http://localhost', ''),
                            version='2.4').json
            seen += [a['uuid'] for a in page['arqs']]
        self.assertEqual(sorted(made), sorted(seen))
        self.assertEqual(len(made), len(set(seen)))


class SQLiteARQTest(_ARQTests, base.APIResourceTestCase):
    backend = 'sqlite'


class MySQLARQTest(_ARQTests, base.APIResourceTestCase):
    backend = 'mysql'


class PostgreSQLARQTest(_ARQTests, base.APIResourceTestCase):
    backend = 'postgresql'
