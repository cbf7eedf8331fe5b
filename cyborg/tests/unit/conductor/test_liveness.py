"""The conductor's checks of its liveness settings, and the heartbeats
it keeps in memory until it writes them."""

import datetime
import logging

import fixtures
from oslo_utils import timeutils

from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.conductor import liveness
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures


class TimingTest(base.TestCase):

    def test_defaults_leave_room_for_a_dying_conductor(self):
        # 60 s against 2 * (10 + 5).
        self.assertTrue(liveness.Liveness(self.conf).check_timing())

    def test_a_timeout_too_short_is_warned_of(self):
        self.flags(host_down_timeout=30, group='conductor')
        self.assertFalse(liveness.Liveness(self.conf).check_timing())
        self.flags(heartbeat_flush_interval=0, group='conductor')
        self.assertTrue(liveness.Liveness(self.conf).check_timing())


class HeardTest(base.TestCase):

    def test_a_later_heartbeat_wins_over_one_put_back(self):
        heard = liveness.Heard()
        early = datetime.datetime(2026, 1, 1, 0, 0, 0)
        late = early + datetime.timedelta(seconds=3)
        heard.add('a', early)
        heard.add('b', early)
        taken = heard.take()
        self.assertEqual({}, heard.take())
        heard.add('a', late)
        heard.put_back(taken)
        self.assertEqual({'a': late, 'b': early}, heard.take())


class SecondAgentTest(base.TestCase):
    """Two agents with one [DEFAULT] host: the second is refused while
    the first is alive, with a line naming the host and both agents."""

    FIRST = 'node-a:/var/lib/cyborg/agent-state.json/100/aaaaaaaaaaaa'
    SECOND = 'node-b:/var/lib/cyborg/agent-state.json/200/bbbbbbbbbbbb'

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self, 'sqlite'))
        self.ctx = cyborg_context.get_admin_context()
        self.liveness = liveness.Liveness(self.conf)
        self.logs = self.useFixture(fixtures.FakeLogger(
            name='cyborg.conductor.liveness', level=logging.WARNING))

    def hello(self, agent_id=None):
        return self.liveness.hello(self.ctx, host_obj.AgentHello(
            hostname='cmp-1', status='READY', endpoint='cmp-1', version='1',
            drivers=[], **({'agent_id': agent_id} if agent_id else {})))

    def silence(self, seconds):
        """``seconds`` pass without a heartbeat."""
        timeutils.set_time_override(timeutils.utcnow()
                                    + datetime.timedelta(seconds=seconds))
        self.addCleanup(timeutils.clear_time_override)

    def test_a_second_live_agent_is_refused(self):
        self.hello(self.FIRST)
        error = self.assertRaises(exception.AgentConflict, self.hello,
                                  self.SECOND)
        for text in ('cmp-1', self.FIRST, self.SECOND):
            self.assertIn(text, str(error))
        [line] = self.logs.output.splitlines()
        self.assertIn('Refused the hello of a second agent: Host cmp-1 is '
                      'held by agent %s' % self.FIRST, line)
        self.assertIn(self.SECOND, line)
        # The first one's hellos still count; it keeps the host.
        self.hello(self.FIRST)
        self.assertRaises(exception.AgentConflict, self.hello, self.SECOND)

    def test_the_next_agent_takes_over_once_the_first_went_silent(self):
        self.hello(self.FIRST)
        self.silence(self.conf.conductor.host_down_timeout + 1)
        self.hello(self.SECOND)
        # And now holds it.
        self.assertRaises(exception.AgentConflict, self.hello, self.FIRST)

    def test_a_restart_in_the_same_seat_takes_over_at_once(self):
        """Same machine, same state file: the holder restarted."""
        self.hello(self.FIRST)
        self.hello('node-a:/var/lib/cyborg/agent-state.json/101/cccccccccccc')
        self.assertEqual('', self.logs.output)

    def test_another_state_file_on_the_same_machine_is_refused(self):
        """Two agents of one machine, each with its configuration."""
        self.hello(self.FIRST)
        self.assertRaises(exception.AgentConflict, self.hello,
                          'node-a:/srv/other/agent-state.json/300/dddddddddddd')

    def test_agents_that_do_not_say_who_they_are_are_not_refused(self):
        """An agent of an older release (AgentHello 1.2)."""
        self.hello(self.FIRST)
        self.hello()
        self.hello(self.SECOND)
        self.assertEqual('', self.logs.output)
