"""Nova's events leave the request path (cyborg.conductor.nova_events):
a bind returns before Nova answers, binds that finish together are told
in one request, one Nova client serves every event, and the durable
"Nova was told" mark gets every event delivered in the end. Through the
API and a real conductor on a real database and (but for SQLite)
RabbitMQ, with a stand-in Nova that can hold its answers."""

from oslo_utils import uuidutils

from cyborg.common import states
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import api as db_api
from cyborg.db import arq_instances
from cyborg.db import models
from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import test_accelerator_requests as arqs

PATH = arqs.PATH


class _NovaEventsTests(arqs.ARQSetup):

    def notified(self, instance):
        """{arq uuid: nova_notified} of ``instance``'s ARQs."""
        ARQ = models.ExtendedAcceleratorRequest
        with db_api.reader.using(self.context) as session:
            return dict(session.query(ARQ.uuid, ARQ.nova_notified).filter(
                ARQ.instance_uuid == instance))

    def boot(self):
        """A bound ARQ of a new instance; (instance, arq uuid)."""
        [arq] = self.create()
        instance, response = self.bind([arq])
        self.assertEqual(202, response.status_int, response.body)
        return instance, arq['uuid']

    def test_a_bind_returns_before_nova_answers(self):
        self.nova.gate.clear()
        instance, uuid = self.boot()
        # Nova holds the event's request; the bind is done all the same.
        resolved = self.get(PATH, headers=arqs.NOVA_USER, service=True,
                            instance=instance, bind_state='resolved')
        self.assertEqual(200, resolved.status_int, resolved.body)
        self.assertEqual(states.BOUND, resolved.json['arqs'][0]['state'])
        self.nova.wait(lambda: self.nova.held == 1)
        self.assertEqual({uuid: False}, self.notified(instance))
        self.nova.gate.set()
        self.told()
        self.assertEqual([uuid], [e['tag'] for e in
                                  self.nova.events_of(instance)])
        self.assertEqual({uuid: True}, self.notified(instance))

    def test_binds_that_finish_together_are_told_in_one_request(self):
        self.nova.gate.clear()
        first, _ = self.boot()
        self.nova.wait(lambda: self.nova.held == 1)
        # While Nova holds the first request, three more binds finish.
        others = {self.boot()[0] for _ in range(3)}
        self.nova.gate.set()
        self.told()
        self.assertEqual([{first}, others],
                         [{e['server_uuid'] for e in events}
                          for events in self.nova.requests])
        for instance in others | {first}:
            self.assertEqual([True], list(self.notified(instance).values()))

    def test_one_client_serves_every_event_and_a_refused_one_is_rebuilt(self):
        client = self.conductor.binding.events.client
        for _ in range(3):
            self.boot()
            self.told()
        self.assertEqual(3, len(self.nova.events))
        self.assertEqual(1, client.builds)
        # The version discovery happened once, if at all.
        self.assertLessEqual(len(self.nova.calls), 4, self.nova.calls)

        self.nova.status = 401
        refused, uuid = self.boot()
        self.told()
        self.assertEqual({uuid: False}, self.notified(refused))
        self.nova.status = 200
        self.conductor.binding.check(self.context)
        self.assertEqual(2, client.builds)
        self.assertEqual({uuid: True}, self.notified(refused))
        self.assertEqual(2, len(self.nova.events_of(refused)))

    def test_a_stopping_conductor_sends_what_it_committed(self):
        self.nova.gate.clear()
        instance, uuid = self.boot()
        self.nova.wait(lambda: self.nova.held == 1)
        self.nova.gate.set()
        self.conductor.del_host()
        self.assertEqual({uuid: True}, self.notified(instance))

    def test_an_instance_is_told_once_all_its_arqs_are_resolved(self):
        [first], [second] = self.create(), self.create()
        instance = uuidutils.generate_uuid()
        values = {'hostname': self.hostname, 'device_rp_uuid': self.rp_uuid,
                  'instance_uuid': instance, 'project_id': base.PROJECT}
        # The first is bound at once, the second waits for its device.
        claims, _failed = db_arqs.bind(
            self.context, {first['uuid']: values, second['uuid']: values},
            None, self.conf.host, lambda arq, _handle: arq.uuid == first[
                'uuid'])
        self.assertEqual([second['uuid']], [c.arq.uuid for c in claims])
        self.assertEqual({}, arq_instances.unnotified(self.context))
        self.assertEqual({}, arq_instances.unnotified(self.context,
                                                      [instance]))
        self.assertEqual([], db_arqs.finish_binds(
            self.context, [second['uuid']], []))
        expected = {instance: {first['uuid']: states.BOUND,
                               second['uuid']: states.BOUND}}
        self.assertEqual(expected, arq_instances.unnotified(self.context))
        self.assertEqual(expected, arq_instances.unnotified(self.context,
                                                      [instance]))
        self.conductor.binding.events.send_pending()
        self.assertEqual(2, len(self.nova.events_of(instance)))
        self.assertEqual({}, arq_instances.unnotified(self.context))

    def test_marking_leaves_the_arqs_told_before_untouched(self):
        instance, told = self.boot()
        self.told()
        ARQ = models.ExtendedAcceleratorRequest
        with db_api.reader.using(self.context) as session:
            before = session.query(ARQ.updated_at).filter(
                ARQ.uuid == told).scalar()
        # The events of an instance name all its ARQs; marking them
        # again writes nothing.
        arq_instances.mark_notified(self.context, [told])
        with db_api.reader.using(self.context) as session:
            self.assertEqual(before, session.query(ARQ.updated_at).filter(
                ARQ.uuid == told).scalar())
        self.assertEqual({told: True}, self.notified(instance))


class SQLiteNovaEventsTest(_NovaEventsTests, base.APIResourceTestCase):
    backend = 'sqlite'


class MySQLNovaEventsTest(_NovaEventsTests, base.APIResourceTestCase):
    backend = 'mysql'
    messaging = 'rabbit'


class PostgreSQLNovaEventsTest(_NovaEventsTests, base.APIResourceTestCase):
    backend = 'postgresql'
    messaging = 'rabbit'
