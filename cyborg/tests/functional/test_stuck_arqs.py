"""ARQs whose instance Nova no longer has are released
(cyborg.conductor.stuck_arqs): through the API and a real conductor on a
real database, with a stand-in Nova whose server list says which
instances exist, fails, or holds its answer."""

import concurrent.futures
import datetime

import fixtures
from oslo_utils import timeutils

from cyborg.common.clients import nova as nova_client
from cyborg.common import states
from cyborg.conductor import stuck_arqs
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import test_accelerator_requests as arqs

PATH = arqs.PATH
INTERVAL = 300


class _StuckARQsTests(arqs.ARQSetup):

    def setUp(self):
        super().setUp()
        self.flags(group='conductor', stuck_arq_grace=0,
                   stuck_arq_interval=INTERVAL)
        self.released = []
        self.useFixture(fixtures.MockPatch(
            'cyborg.common.notifications.emit',
            lambda _ctx, event, priority, payload: self.released.append(
                (event, priority, payload.uuid, payload.instance_uuid))))
        self.stuck = self.conductor.stuck_arqs
        # Checks at successive intervals, as the periodic task runs them.
        self.clock = timeutils.utcnow() + datetime.timedelta(seconds=1)

    def boot(self):
        """A bound ARQ of a new instance; (instance, arq uuid)."""
        [arq] = self.create()
        instance, response = self.bind([arq])
        self.assertEqual(202, response.status_int, response.body)
        self.told()
        return instance, arq['uuid']

    def check(self, stuck=None):
        # After every bind so far, with a grace of 0.
        self.clock = max(self.clock, timeutils.utcnow() +
                         datetime.timedelta(seconds=1))
        released = (stuck or self.stuck).check(self.context, now=self.clock)
        self.clock += datetime.timedelta(seconds=INTERVAL)
        return released

    def arqs_of(self, instance):
        return self.get(PATH, instance=instance).json['arqs']

    def handles_in_use(self):
        with db_api.reader.using(self.context) as session:
            return session.query(models.AttachHandle).filter(
                models.AttachHandle.in_use.is_(True)).count()

    def asked(self):
        return [set(uuids) for uuids in self.nova.servers_asked]

    def test_gone_present_and_building(self):
        gone, gone_arq = self.boot()
        active, active_arq = self.boot()
        building, building_arq = self.boot()
        self.nova.servers = {active: 'ACTIVE', building: 'BUILD'}
        self.assertEqual(3, self.handles_in_use())
        shown = {i: self.arqs_of(i) for i in (active, building)}

        self.assertEqual(1, self.check())
        self.assertEqual([], self.arqs_of(gone))
        self.assertEqual(2, self.handles_in_use())
        self.assertEqual([('arq.released', 'WARNING', gone_arq, gone)],
                         self.released)
        for instance, uuid in ((active, active_arq),
                               (building, building_arq)):
            [arq] = self.arqs_of(instance)
            self.assertEqual((uuid, states.BOUND), (arq['uuid'],
                                                    arq['state']))
        self.assertEqual([{gone, active, building}], self.asked())
        # Asked about and confirmed, the ARQs are as the API showed them.
        self.assertEqual(shown, {i: self.arqs_of(i) for i in shown})

        # The active one is confirmed; the building one is asked about
        # again, and released once Nova has deleted it.
        self.nova.servers = {active: 'ACTIVE'}
        self.assertEqual(1, self.check())
        self.assertEqual({building}, self.asked()[-1])
        self.assertEqual([], self.arqs_of(building))
        self.assertEqual(1, self.handles_in_use())
        # Nothing left to ask about: no request at all.
        self.assertEqual(0, self.check())
        self.assertEqual(2, len(self.nova.servers_asked))
        self.assertEqual(1, len(self.arqs_of(active)))

    def test_a_deleted_or_unknown_server(self):
        deleted, _ = self.boot()
        unknown, _ = self.boot()
        # Listed as deleted: gone; in a cell that does not answer: kept.
        self.nova.servers = {deleted: 'DELETED', unknown: 'UNKNOWN'}
        self.assertEqual(1, self.check())
        self.assertEqual([], self.arqs_of(deleted))
        self.assertEqual(1, len(self.arqs_of(unknown)))
        # Asked about again at the next check.
        self.assertEqual(0, self.check())
        self.assertEqual({unknown}, self.asked()[-1])

    def test_nothing_is_released_while_nova_cannot_say(self):
        instance, uuid = self.boot()
        for status in (500, 503, 401, 403, 404):
            self.nova.servers_status = status
            self.assertEqual(0, self.check(), status)
            self.assertEqual(states.BOUND,
                             self.arqs_of(instance)[0]['state'])
        self.assertEqual(5, len(self.nova.servers_asked))
        self.assertEqual([], self.released)
        # Nova answers again: the next check releases it.
        self.nova.servers_status = 200
        self.assertEqual(1, self.check())
        self.assertEqual([], self.arqs_of(instance))
        self.assertEqual(0, self.handles_in_use())

    def test_nothing_is_released_when_nova_is_unreachable_or_slow(self):
        instance, _ = self.boot()
        self.told()
        # Nothing listens there.
        self.flags(group='nova', endpoint='http://127.0.0.1:9/v2.1')
        unreachable = stuck_arqs.StuckARQs(
            self.conf, self.conductor.binding,
            client=nova_client.Client(self.conf))
        self.assertEqual(0, self.check(unreachable))
        self.assertEqual([], self.nova.servers_asked)
        # Nova takes longer than [nova] timeout to answer.
        self.flags(group='nova', timeout=1, **self.nova.config())
        slow = stuck_arqs.StuckARQs(self.conf, self.conductor.binding,
                                    client=nova_client.Client(self.conf))
        self.nova.servers_gate.clear()
        self.assertEqual(0, self.check(slow))
        # Asked once: a timed out request is not tried again, unless
        # [nova] connect_retries says so.
        self.assertEqual(1, self.nova.servers_held)
        self.flags(group='nova', connect_retries=1, connect_retry_delay=0)
        retrying = stuck_arqs.StuckARQs(self.conf, self.conductor.binding,
                                        client=nova_client.Client(self.conf))
        self.assertEqual(0, self.check(retrying))
        self.assertEqual(3, self.nova.servers_held)
        self.nova.servers_gate.set()
        self.assertEqual(states.BOUND, self.arqs_of(instance)[0]['state'])
        self.assertEqual([], self.released)
        # Answered in time, at the next check: released.
        self.flags(group='nova', timeout=None)
        self.assertEqual(1, self.check())
        self.assertEqual([], self.arqs_of(instance))

    def test_nothing_is_asked_within_the_grace_or_without_nova(self):
        self.boot()
        self.flags(group='conductor', stuck_arq_grace=3600)
        self.assertEqual(0, self.check())
        self.flags(group='conductor', stuck_arq_grace=0)
        self.flags(group='nova', auth_type=None)
        self.assertEqual(0, self.check())
        self.assertEqual([], self.nova.servers_asked)

    def test_an_instance_is_asked_about_once_an_interval(self):
        instance, _ = self.boot()
        self.nova.servers = {instance: 'BUILD'}
        now = timeutils.utcnow() + datetime.timedelta(seconds=1)
        self.assertEqual(0, self.stuck.check(self.context, now=now))
        # Another check within the interval (a second conductor, say).
        self.assertEqual(0, self.stuck.check(
            self.context, now=now + datetime.timedelta(seconds=10)))
        self.assertEqual(1, len(self.nova.servers_asked))
        # A whole interval later, it is asked about again.
        self.assertEqual(0, self.stuck.check(
            self.context, now=now + datetime.timedelta(seconds=INTERVAL)))
        self.assertEqual(2, len(self.nova.servers_asked))

    def test_many_instances_few_per_request_bounded_per_check(self):
        self.flags(group='conductor',
                   stuck_arq_limit=stuck_arqs.PER_REQUEST + 1)
        self.flags(group='nova', auth_type=None)
        instances = [self.boot()[0]
                     for _ in range(stuck_arqs.PER_REQUEST + 2)]
        self.flags(group='nova', **self.nova.config())
        self.assertEqual(stuck_arqs.PER_REQUEST + 1, self.check())
        self.assertEqual([stuck_arqs.PER_REQUEST, 1],
                         [len(a) for a in self.nova.servers_asked])
        self.assertEqual(1, self.check())
        self.assertEqual(set(instances), set().union(*self.asked()))
        self.assertEqual(0, self.handles_in_use())

    def test_a_rebound_arq_is_asked_about_anew(self):
        instance, uuid = self.boot()
        self.nova.servers = {instance: 'ACTIVE'}
        self.assertEqual(0, self.check())
        # Unbound and bound to another instance, which Nova does not have.
        response = self.patch(PATH, {uuid: [
            {'op': 'remove', 'path': '/instance_uuid'}]},
            headers=arqs.NOVA_USER, service=True)
        self.assertEqual(202, response.status_int, response.body)
        other, response = self.bind([{'uuid': uuid}])
        self.assertEqual(202, response.status_int, response.body)
        self.assertEqual(1, self.check())
        self.assertEqual({other}, self.asked()[-1])

    def test_two_conductors_share_the_instances(self):
        self.flags(group='nova', auth_type=None)
        instances = {self.boot()[0] for _ in range(4)}
        self.flags(group='nova', **self.nova.config())
        self.flags(group='conductor', stuck_arq_limit=2)
        other = stuck_arqs.StuckARQs(self.conf, self.conductor.binding)
        self.nova.servers_gate.clear()
        self.clock = timeutils.utcnow() + datetime.timedelta(seconds=1)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            first = pool.submit(self.stuck.check, self.context,
                                now=self.clock)
            self.nova.wait(lambda: self.nova.servers_held == 1)
            second = pool.submit(other.check, self.context, now=self.clock)
            self.nova.wait(lambda: self.nova.servers_held == 2)
            self.nova.servers_gate.set()
            self.assertEqual([2, 2], [first.result(60), second.result(60)])
        asked = self.asked()
        self.assertEqual(2, len(asked))
        self.assertEqual(set(), asked[0] & asked[1])
        self.assertEqual(instances, asked[0] | asked[1])
        self.assertEqual(4, len(self.released))
        self.assertEqual(0, self.handles_in_use())


class SQLiteStuckARQsTest(_StuckARQsTests, base.APIResourceTestCase):
    backend = 'sqlite'


class MySQLStuckARQsTest(_StuckARQsTests, base.APIResourceTestCase):
    backend = 'mysql'
    messaging = 'rabbit'


class PostgreSQLStuckARQsTest(_StuckARQsTests, base.APIResourceTestCase):
    backend = 'postgresql'
    messaging = 'rabbit'
