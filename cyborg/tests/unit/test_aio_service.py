"""Who creates the compute node provider of the all-in-one."""

from cyborg.aio import placement as aio_placement
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


class PlacementMountTest(base.TestCase):
    """keystoneauth asks for Placement's version document with no token
    first: the mount serves it, as Placement's noauth2 does at its root,
    rather than a 401 in the log at every start."""

    def call(self, path):
        seen = {}

        def placement(environ, start_response):
            seen.update(script=environ['SCRIPT_NAME'],
                        path=environ['PATH_INFO'])
            return []
        aio_placement.mount(None, placement)(
            {'PATH_INFO': path, 'SCRIPT_NAME': ''}, None)
        return seen

    def test_the_prefix_alone_is_placements_root(self):
        self.assertEqual({'script': '/placement', 'path': '/'},
                         self.call('/placement'))

    def test_paths_under_the_prefix_keep_their_path(self):
        self.assertEqual({'script': '/placement', 'path': '/traits'},
                         self.call('/placement/traits'))
