"""The keyed diff, the report hash and the wanted Placement providers."""

from cyborg.agent import reporter as agent_reporter
from cyborg.common import exception
from cyborg.conductor import placement_service
from cyborg.conductor import placement_sync
from cyborg.conductor import reconciler
from cyborg.objects import driver_device as dd
from cyborg.tests import base


def _attr(key, value):
    return dd.DriverAttribute(key=key, value=value)


class KeyedDiffTest(base.TestCase):

    def test_added_removed_changed_unchanged(self):
        old = [('a', 1), ('b', 2), ('c', 3)]
        new = [('b', 2), ('c', 30), ('d', 4)]
        diff = reconciler.keyed_diff(old, new, lambda o: o[0], lambda n: n[0],
                                    lambda o, n: o[1] != n[1])
        self.assertEqual([('d', 4)], diff.added)
        self.assertEqual([('a', 1)], diff.removed)
        self.assertEqual([(('c', 3), ('c', 30))], diff.changed)
        self.assertEqual([(('b', 2), ('b', 2))], diff.unchanged)

    def test_without_differs_every_match_is_unchanged(self):
        diff = reconciler.keyed_diff([1], [1], str, str)
        self.assertEqual(([], [], [], [(1, 1)]), tuple(diff))

    def test_duplicate_key_in_report_is_invalid(self):
        self.assertRaises(exception.Invalid, reconciler.keyed_diff,
                          [], ['x', 'x'], str, str)


class ReportHashTest(base.TestCase):

    def _deployable(self, attributes):
        return dd.DriverDeployable(name='d', num_accelerators=1,
                                   attribute_list=attributes)

    def test_order_of_lists_does_not_matter(self):
        one = self._deployable([_attr('rc', 'FPGA'), _attr('trait0', 'X')])
        two = self._deployable([_attr('trait0', 'X'), _attr('rc', 'FPGA')])
        self.assertEqual(agent_reporter.report_hash([one]),
                         agent_reporter.report_hash([two]))

    def test_content_matters(self):
        one = self._deployable([_attr('rc', 'FPGA')])
        two = self._deployable([_attr('rc', 'PGPU')])
        self.assertNotEqual(agent_reporter.report_hash([one]),
                            agent_reporter.report_hash([two]))


class WantedProviderTest(base.TestCase):

    def test_upstream_layout(self):
        provider = placement_sync.wanted_provider(
            'host_dev', 4, {'rc': 'FPGA', 'trait0': 'CUSTOM_A',
                            'trait1': 'CUSTOM_B', 'other': 'CUSTOM_C'})
        # uuid3 of the name, as upstream and Nova expect.
        self.assertEqual('3b41381c-eb19-3e12-85bc-56b907bcae47',
                         provider.uuid)
        self.assertEqual(('FPGA', 4), (provider.resource_class,
                                       provider.total))
        self.assertEqual({'CUSTOM_A', 'CUSTOM_B', 'OWNER_CYBORG'},
                         provider.traits)

    def test_no_or_bad_resource_class_is_not_reported(self):
        self.assertIsNone(placement_sync.wanted_provider('d', 1, {}))
        self.assertIsNone(placement_sync.wanted_provider(
            'd', 1, {'rc': 'not-a-class'}))

    def test_bad_trait_is_dropped(self):
        provider = placement_sync.wanted_provider(
            'd', 1, {'rc': 'CUSTOM_X', 'trait0': 'lower-case'})
        self.assertEqual({'OWNER_CYBORG'}, provider.traits)

    def test_another_services_owner_trait_is_dropped(self):
        # Nova 34 requires OWNER_NOVA on the providers it schedules for
        # itself: an attribute must not put cyborg's among them.
        self.assertIn('OWNER_NOVA', placement_sync.FOREIGN_OWNER_TRAITS)
        with self.assertLogs('cyborg.conductor.placement_sync',
                             'WARNING') as logs:
            provider = placement_sync.wanted_provider(
                'd', 1, {'rc': 'FPGA', 'trait0': 'OWNER_NOVA',
                         'trait1': 'OWNER_CYBORG', 'trait2': 'CUSTOM_A'})
        self.assertEqual({'OWNER_CYBORG', 'CUSTOM_A'}, provider.traits)
        self.assertIn('OWNER_NOVA', logs.output[0])


class _Response:

    def __init__(self, status, body):
        self.status_code = status
        self.body = body
        self.text = ''

    def json(self):
        return self.body


class _ConflictOnce:
    """A Placement that answers one generation conflict, then accepts."""

    def __init__(self):
        self.calls = []
        self.conflicts = 1
        # Whether the provider is deleted by the time it is re-read.
        self.gone = False

    def request(self, url, method, **kwargs):
        self.calls.append((method, url))
        if self.conflicts:
            self.conflicts -= 1
            return _Response(409, {'errors': [
                {'code': 'placement.concurrent_update', 'detail': 'gen'}]})
        return _Response(200, {'resource_provider_generation': 7})

    def get(self, url, **kwargs):
        self.calls.append(('GET', url))
        if self.gone:
            return _Response(404, {'errors': [
                {'code': 'placement.undefined_code', 'detail': 'gone'}]})
        return _Response(200, {'generation': 6})


class GenerationConflictTest(base.TestCase):

    def test_conflict_rereads_generation_and_retries(self):
        client = _ConflictOnce()
        sync = placement_service.PlacementService(self.conf, client).sync
        seen = []

        def put(generation):
            seen.append(generation)
            return placement_sync.placement.set_traits(client, 'u',
                                                       generation, [])
        self.assertEqual(7, sync._retry_on_conflict('u', 5, put))
        self.assertEqual([5, 6], seen)

    def test_provider_deleted_meanwhile_fails_the_sync_as_placement(self):
        # Another conductor's sync of a newer report of the host deleted
        # the provider between our write and the re-read: a Placement
        # error (the sync fails, the host is pending, the agent sends
        # again), not a TypeError out of the RPC call.
        client = _ConflictOnce()
        client.gone = True
        sync = placement_service.PlacementService(self.conf, client).sync
        error = self.assertRaises(
            exception.PlacementError, sync._retry_on_conflict, 'u', 5,
            lambda g: placement_sync.placement.set_traits(client, 'u', g,
                                                          []))
        self.assertEqual(404, error.kwargs['status'])
        self.assertIsInstance(error, placement_service.SYNC_ERRORS)
