"""The first real exchange: an agent says hello, sends heartbeats, and the
conductor records the host, its drivers and its liveness."""

import calendar
import datetime
import time
from unittest import mock

import fixtures
from oslo_utils import timeutils
import sqlalchemy as sa

from cyborg.agent import manager as agent_manager
from cyborg.common import context
from cyborg.common import exception
from cyborg.common import rpc
from cyborg.conductor import liveness as conductor_liveness
from cyborg.conductor import manager as conductor_manager
from cyborg.db import hosts as db_hosts
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures

def wait_for(predicate, timeout=20, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError('condition not met within %s s' % timeout)


class _HelloTests:
    """Run by the classes at the end against each pair of backends."""

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self, self.db))
        self.messaging = self.useFixture(cyborg_fixtures.Messaging(
            self, self.conf, self.transport))
        self.flags(heartbeat_interval=1, group='agent')
        self.ctx = context.get_admin_context()

    def _start(self, manager, topic, host):
        return cyborg_fixtures.start_rpc_service(self, manager, topic, host)

    def start_conductor(self, host='conductor-1'):
        return self._start(conductor_manager.ConductorManager(host, self.conf),
                           rpc.CONDUCTOR_TOPIC, host)

    def start_agent(self, host):
        self.flags(host=host)
        return self._start(agent_manager.AgentManager(host, self.conf),
                           rpc.AGENT_TOPIC, host)

    def host_row(self, hostname):
        try:
            return db_hosts.get_by_hostname(self.ctx, hostname)
        except Exception:
            return None

    def test_hello_records_host_and_drivers(self):
        self.start_conductor()
        self.flags(enabled_drivers=['fake_driver', 'no_such_driver'],
                   group='agent')
        self.start_agent('compute-1')
        host, drivers = wait_for(lambda: self.host_row('compute-1'))
        self.assertEqual('up', host.status)
        self.assertEqual('compute-1', host.endpoint)
        by_name = {d.name: d for d in drivers}
        self.assertEqual('READY', by_name['fake_driver'].status)
        self.assertEqual('FPGA', by_name['fake_driver'].device_type)
        self.assertEqual('FAILED', by_name['no_such_driver'].status)
        self.assertIn('no driver of that name',
                      by_name['no_such_driver'].error)

    def test_heartbeats_move_last_seen(self):
        self.start_conductor()
        self.start_agent('compute-2')
        first, _ = wait_for(lambda: self.host_row('compute-2'))
        later = wait_for(lambda: (
            self.host_row('compute-2')[0].last_seen_at > first.last_seen_at
            and self.host_row('compute-2')[0]))
        self.assertEqual('up', later.status)

    def test_agent_started_before_conductor_registers(self):
        self.start_agent('compute-3')
        time.sleep(1.5)
        self.assertIsNone(self.host_row('compute-3'))
        self.start_conductor()
        host, _ = wait_for(lambda: self.host_row('compute-3'))
        self.assertEqual('up', host.status)

    def test_silent_host_marked_down_then_up_again(self):
        conductor = self.start_conductor()
        agent = self.start_agent('compute-4')
        wait_for(lambda: self.host_row('compute-4'))
        agent.stop()
        self.flags(host_down_timeout=1, group='conductor')
        liveness = conductor.manager.liveness
        wait_for(lambda: self.host_row('compute-4')[0].status == 'down')
        # From now on the conductor's periodic check must not mark the host
        # down again behind the test's back.
        self.flags(host_down_timeout=3600, group='conductor')
        # Exactly one alarm, with the host as payload.
        # The notification follows the commit that marked it down.
        down = wait_for(lambda: self.events('cyborg.host.down'))
        self.assertEqual(1, len(down))
        self.assertEqual('ERROR', down[0]['priority'])
        payload = down[0]['payload']['cyborg_object.data']
        self.assertEqual(('compute-4', 'down'),
                         (payload['hostname'], payload['status']))
        # A second check finds nothing more to report.
        self.assertEqual([], db_hosts.mark_silent_hosts_down(self.ctx, 1))
        liveness.heartbeat(self.ctx, 'compute-4')
        liveness.flush_heartbeats(self.ctx)
        self.assertEqual('up', self.host_row('compute-4')[0].status)
        up = self.events('cyborg.host.up')
        self.assertEqual(1, len(up))
        self.assertEqual('INFO', up[0]['priority'])
        self.assertEqual(1, len(self.events('cyborg.host.down')))

    def statements(self):
        """The SQL statements run from now on (BEGIN and COMMIT aside)."""
        run = []

        def record(_conn, _cursor, statement, *_args):
            verb = statement.split()[0].upper()
            if verb not in ('BEGIN', 'COMMIT', 'ROLLBACK'):
                run.append(verb)
        engine = db_hosts.db_api.get_engine()
        sa.event.listen(engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, engine, 'before_cursor_execute',
                        record)
        return run

    def test_idle_liveness_costs_one_statement_each(self):
        db_hosts.record_hello(self.ctx, 'compute-6', 'compute-6', '1', [])
        run = self.statements()
        # A heartbeat of a host that is up: one UPDATE.
        self.assertEqual('up', db_hosts.record_heartbeat(self.ctx,
                                                         'compute-6'))
        self.assertEqual(['UPDATE'], run)
        del run[:]
        # A liveness check that finds every host heard from: one SELECT.
        self.assertEqual([], db_hosts.mark_silent_hosts_down(self.ctx, 60))
        self.assertEqual(['SELECT'], run)

    def test_heartbeats_of_many_hosts_cost_one_update(self):
        hosts = ['many-%03d' % i for i in range(120)]
        for hostname in hosts:
            db_hosts.record_hello(self.ctx, hostname, hostname, '1', [])
        before = {h: self.host_row(h)[0].last_seen_at for h in hosts}
        # Heard within the same second (hosts heard in different seconds
        # are written by one UPDATE per second).
        self.useFixture(fixtures.MockPatchObject(
            timeutils, 'utcnow', return_value=timeutils.utcnow()))
        liveness = conductor_liveness.Liveness(self.conf)
        run = self.statements()
        for hostname in hosts:
            liveness.heartbeat(self.ctx, hostname)
        # Heard: nothing written yet.
        self.assertEqual([], run)
        liveness.flush_heartbeats(self.ctx)
        self.assertEqual(['UPDATE'], run)
        for hostname in hosts:
            self.assertGreaterEqual(self.host_row(hostname)[0].last_seen_at,
                                    before[hostname])
        del run[:]
        # Nothing heard since: a flush writes nothing.
        liveness.flush_heartbeats(self.ctx)
        self.assertEqual([], run)
        # One UPDATE per chunk of hosts.
        with mock.patch.object(db_hosts, 'HEARTBEAT_CHUNK', 50):
            for hostname in hosts:
                liveness.heartbeat(self.ctx, hostname)
            liveness.flush_heartbeats(self.ctx)
        self.assertEqual(['UPDATE'] * 3, run)

    def test_flush_never_moves_last_seen_back(self):
        db_hosts.record_hello(self.ctx, 'compute-8', 'compute-8', '1', [])
        late = timeutils.utcnow() + datetime.timedelta(minutes=5)
        with db_hosts.db_api.writer.using(self.ctx) as session:
            session.query(db_hosts.models.Host).filter_by(
                hostname='compute-8').update({'last_seen_at': late})
        # Heard by this conductor before another wrote the later time.
        self.assertEqual([], db_hosts.record_heartbeats(
            self.ctx, {'compute-8': timeutils.utcnow()}))
        self.assertEqual(late.replace(microsecond=0),
                         self.host_row('compute-8')[0].last_seen_at.replace(
                             microsecond=0))

    def test_each_host_is_written_at_the_second_it_was_heard(self):
        for hostname in ('early', 'late'):
            db_hosts.record_hello(self.ctx, hostname, hostname, '1', [])
        now = timeutils.utcnow().replace(microsecond=0)
        early = now + datetime.timedelta(seconds=30, microseconds=700)
        late = now + datetime.timedelta(seconds=90)
        # Not both moved on to the later time: a heartbeat signed long
        # ago (replayed) counts for when it was signed.
        self.assertEqual([], db_hosts.record_heartbeats(
            self.ctx, {'early': early, 'late': late}))
        self.assertEqual(early.replace(microsecond=0),
                         self.host_row('early')[0].last_seen_at.replace(
                             microsecond=0))
        self.assertLess(self.host_row('early')[0].last_seen_at,
                        early + datetime.timedelta(seconds=1))
        self.assertEqual(late, self.host_row('late')[0].last_seen_at.replace(
            microsecond=0))

    def test_an_old_heartbeat_does_not_revive_a_host_marked_down(self):
        db_hosts.record_hello(self.ctx, 'gone', 'gone', '1', [])
        last = self.host_row('gone')[0].last_seen_at
        with db_hosts.db_api.writer.using(self.ctx) as session:
            session.query(db_hosts.models.Host).filter_by(
                hostname='gone').update({'status': 'down'})
        liveness = conductor_liveness.Liveness(self.conf)
        # A heartbeat the host signed before it went silent, replayed now
        # (on the heartbeat channel, heard at its signed time).
        signed = last - datetime.timedelta(seconds=10)
        liveness.heard_at('gone', calendar.timegm(signed.timetuple()))
        liveness.flush_heartbeats(self.ctx)
        self.assertEqual(('down', last), (self.host_row('gone')[0].status,
                                          self.host_row('gone')[0]
                                          .last_seen_at))
        self.assertEqual([], self.events('cyborg.host.up'))
        # One it signed since: it is back.
        liveness.heard_at('gone', time.time())
        liveness.flush_heartbeats(self.ctx)
        self.assertEqual('up', self.host_row('gone')[0].status)
        self.assertEqual(1, len(self.events('cyborg.host.up')))

    def test_flush_acts_on_hosts_down_or_unknown(self):
        for hostname in ('up-1', 'up-2', 'was-down'):
            db_hosts.record_hello(self.ctx, hostname, hostname, '1', [])
        with db_hosts.db_api.writer.using(self.ctx) as session:
            session.query(db_hosts.models.Host).filter_by(
                hostname='was-down').update({'status': 'down'})
        agents = mock.Mock()
        liveness = conductor_liveness.Liveness(self.conf, agents=agents)
        for hostname in ('up-1', 'was-down', 'up-2', 'stranger'):
            liveness.heartbeat(self.ctx, hostname)
        self.assertEqual('down', self.host_row('was-down')[0].status)
        liveness.flush_heartbeats(self.ctx)
        self.assertEqual('up', self.host_row('was-down')[0].status)
        [up] = self.events('cyborg.host.up')
        self.assertEqual('was-down',
                         up['payload']['cyborg_object.data']['hostname'])
        agents.say_hello.assert_called_once_with(self.ctx, 'stranger')
        self.assertEqual({}, liveness.heard.take())

    def test_heartbeats_kept_while_the_database_fails(self):
        db_hosts.record_hello(self.ctx, 'compute-9', 'compute-9', '1', [])
        liveness = conductor_liveness.Liveness(self.conf)
        liveness.heartbeat(self.ctx, 'compute-9')
        with mock.patch.object(db_hosts, 'record_heartbeats',
                               side_effect=exception.DatabaseUnavailable(
                                   reason='gone')):
            self.assertRaises(exception.DatabaseUnavailable,
                              liveness.flush_heartbeats, self.ctx)
        self.assertEqual(['compute-9'], list(liveness.heard.take()))

    def test_no_flush_interval_writes_each_heartbeat(self):
        self.flags(heartbeat_flush_interval=0, group='conductor')
        db_hosts.record_hello(self.ctx, 'compute-10', 'compute-10', '1', [])
        liveness = conductor_liveness.Liveness(self.conf)
        run = self.statements()
        liveness.heartbeat(self.ctx, 'compute-10')
        self.assertEqual(['UPDATE'], run)

    def test_hello_answers_from_its_one_transaction(self):
        liveness = conductor_liveness.Liveness(self.conf)

        def hello(*drivers):
            run = self.statements()
            with mock.patch.object(db_hosts, 'get_by_hostname',
                                   side_effect=AssertionError('re-read')):
                answer = liveness.hello(self.ctx, host_obj.AgentHello(
                    hostname='compute-7', endpoint='compute-7',
                    version='1', drivers=[host_obj.HostDriver(
                        name=name, status=status, device_type='FPGA',
                        version=None, error=None)
                        for name, status in drivers]))
            # The host and its drivers, read once before they are written.
            self.assertEqual(2, run.count('SELECT'), run)
            # What a reader finds after the hello, to the microsecond.
            self.assertEqual(
                liveness.get_host(self.ctx, 'compute-7').obj_to_primitive(),
                answer.obj_to_primitive())
            return answer

        first = hello(('fake_driver', 'READY'), ('b_driver', 'FAILED'))
        self.assertEqual(['b_driver', 'fake_driver'],
                         [d.name for d in first.drivers])
        with db_hosts.db_api.writer.using(self.ctx) as session:
            session.query(db_hosts.models.Host).update({'status': 'down'})
        # A known host, back after it was marked down, with a driver
        # changed, one gone and one new.
        again = hello(('fake_driver', 'FAILED'), ('a_driver', 'READY'))
        self.assertEqual(('up', first.id, first.created_at),
                         (again.status, again.id, again.created_at))
        self.assertEqual([('a_driver', 'READY'), ('fake_driver', 'FAILED')],
                         [(d.name, d.status) for d in again.drivers])
        [up] = self.events('cyborg.host.up')
        self.assertEqual(
            again.obj_to_primitive(), up['payload'])

    def events(self, event_type):
        # Each entry: (context, message, priority, retry).
        return [message for _ctx, message, _prio, _retry
                in self.messaging.notifications
                if message['event_type'] == event_type]

    def test_heartbeat_from_unknown_host_asks_for_hello(self):
        self.start_conductor()
        svc = self.start_agent('compute-5')
        wait_for(lambda: self.host_row('compute-5'))
        with db_hosts.db_api.writer.using(self.ctx) as session:
            session.query(db_hosts.models.Host).delete()
        self.assertIsNone(self.host_row('compute-5'))
        svc.manager.reporter.conductor.agent_heartbeat(self.ctx, 'compute-5')
        host, _ = wait_for(lambda: self.host_row('compute-5'))
        self.assertLessEqual(host.last_seen_at, timeutils.utcnow())


class HelloSQLiteInProcessTest(_HelloTests, base.TestCase):
    db, transport = 'sqlite', 'fake'


class HelloMySQLRabbitTest(_HelloTests, base.TestCase):
    db, transport = 'mysql', 'rabbit'


class HelloPostgreSQLRabbitTest(_HelloTests, base.TestCase):
    db, transport = 'postgresql', 'rabbit'
