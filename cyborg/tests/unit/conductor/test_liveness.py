"""The conductor's checks of its liveness settings, and the heartbeats
it keeps in memory until it writes them."""

import datetime

from cyborg.conductor import liveness
from cyborg.tests import base


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
