"""What the events' thread sends for a batch of instances posted with
their ARQs' states (a bind that resolved them) and without (read)."""

from unittest import mock

from cyborg.common import states
from cyborg.conductor import nova_events
from cyborg.tests import base

POSTED = 'a0000000-0000-4000-8000-000000000001'
READ = 'b0000000-0000-4000-8000-000000000002'


class SendBatchTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.events = nova_events.NovaEvents(self.conf)
        self.sent = []
        self.events.client = mock.Mock(send_events=self._take)
        self.unnotified = self.patch_db('unnotified', {})
        self.marked = self.patch_db('mark_notified', None)

    def patch_db(self, name, value):
        patcher = mock.patch.object(nova_events.arq_instances, name,
                                    return_value=value)
        self.addCleanup(patcher.stop)
        return patcher.start()

    def _take(self, event_list):
        self.sent.extend(event_list)
        return {event['tag'] for event in event_list}

    def sent_of(self):
        return {(e['server_uuid'], e['tag'], e['status']) for e in self.sent}

    def test_posted_states_are_sent_without_a_read(self):
        self.events._send_batch([nova_events.Known(POSTED, {
            'arq-1': states.BOUND, 'arq-2': states.BIND_FAILED})])
        self.unnotified.assert_not_called()
        self.assertEqual({(POSTED, 'arq-1', 'completed'),
                          (POSTED, 'arq-2', 'failed')}, self.sent_of())
        self.marked.assert_called_once_with(mock.ANY, ['arq-1', 'arq-2'])

    def test_what_is_read_wins_over_what_was_posted(self):
        # The instance was also posted to be read (a later bind left an
        # ARQ to prepare): the read says what is true now.
        self.unnotified.return_value = {READ: {'arq-3': states.BOUND}}
        self.events._send_batch([
            nova_events.Known(POSTED, {'arq-1': states.BOUND}),
            nova_events.Known(READ, {'arq-3': states.BIND_FAILED}), READ])
        self.unnotified.assert_called_once_with(mock.ANY, {READ})
        self.assertEqual({(POSTED, 'arq-1', 'completed'),
                          (READ, 'arq-3', 'completed')}, self.sent_of())

    def test_a_read_of_every_pending_instance_covers_those_posted(self):
        self.unnotified.return_value = {READ: {'arq-3': states.BOUND}}
        self.events._send_batch([
            nova_events.Known(POSTED, {'arq-1': states.BOUND}),
            nova_events.EVERY_PENDING])
        self.unnotified.assert_called_once_with(mock.ANY, None)
        # POSTED, already told or changed, is not in the read: not sent.
        self.assertEqual({(READ, 'arq-3', 'completed')}, self.sent_of())
