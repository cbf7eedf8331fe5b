"""Who creates the compute node provider of the all-in-one."""

from cyborg.aio import service as aio_service
from cyborg.tests import base


class ComputeNodeProviderTest(base.TestCase):

    def test_without_nova_cyborg_creates_it(self):
        self.assertTrue(aio_service.creates_compute_node(self.conf))

    def test_a_configured_nova_creates_it(self):
        for options in ({'auth_type': 'password'},
                        {'endpoint_override': 'http://127.0.0.1:1/v2.1'}):
            self.conf.clear_override('auth_type', group='nova')
            self.conf.clear_override('endpoint_override', group='nova')
            self.flags(group='nova', **options)
            self.assertFalse(aio_service.creates_compute_node(self.conf),
                             options)

    def test_the_option_wins(self):
        self.flags(group='aio', compute_node_provider='nova')
        self.assertFalse(aio_service.creates_compute_node(self.conf))
        self.flags(group='aio', compute_node_provider='cyborg')
        self.flags(group='nova', auth_type='password')
        self.assertTrue(aio_service.creates_compute_node(self.conf))

    def test_left_to_nova_nothing_is_asked_of_placement(self):
        # No [placement] is configured: creating would fail to connect.
        self.flags(group='aio', compute_node_provider='nova')
        self.assertIsNone(aio_service.ensure_compute_node(self.conf))
