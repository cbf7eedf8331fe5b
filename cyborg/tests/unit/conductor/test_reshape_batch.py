"""The shared ``POST /reshaper`` of syncs whose inventories are set
together (``PlacementSync._reshape_batch``), with a client that records
its requests; against a real Placement in
``cyborg.tests.functional.test_reshape_batch``."""

from unittest import mock

import fixtures

from cyborg.conductor import placement_sync
from cyborg.tests import base


class ReshapeBatchUnitTest(base.TestCase):
    """The batch itself, with a client that records its requests."""

    def setUp(self):
        super().setUp()
        self.sent = []
        self.fail = False

        def set_many_inventories(client, inventories):
            self.sent.append(dict(inventories))
            if self.fail:
                raise RuntimeError('refused')
        self.useFixture(fixtures.MockPatchObject(
            placement_sync.placement, 'set_many_inventories',
            set_many_inventories))
        self.sync = placement_sync.PlacementSync(mock.Mock())

    def test_one_request_is_its_own_and_so_is_its_error(self):
        self.assertEqual([None], self.sync._reshape_batch([{'a': 1}]))
        self.fail = True
        [outcome] = self.sync._reshape_batch([{'a': 1}])
        self.assertIsInstance(outcome, RuntimeError)

    def test_several_are_one_request(self):
        self.assertEqual([None, None], self.sync._reshape_batch(
            [{'a': 1, 'b': 2}, {'c': 3}]))
        self.assertEqual([{'a': 1, 'b': 2, 'c': 3}], self.sent)

    def test_a_provider_twice_goes_alone_the_second_time(self):
        self.assertEqual(
            [None, placement_sync._ALONE, None],
            self.sync._reshape_batch([{'a': 1}, {'a': 2}, {'c': 3}]))
        self.assertEqual([{'a': 1, 'c': 3}], self.sent)

    def test_a_failed_shared_request_sends_each_alone(self):
        self.fail = True
        self.assertEqual([placement_sync._ALONE] * 2,
                         self.sync._reshape_batch([{'a': 1}, {'c': 3}]))
