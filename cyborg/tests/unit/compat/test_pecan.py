"""cyborg.compat.pecan on pecan's own core: the controller's argument
list is asked of ``pecan.core.getargspec`` at each request, and the cached
lookup answers as pecan's does; pecan's routing looks for a controller
class's custom routes through ``pecan.routing._detect_custom_path_segments``
and finds them, and their clashes, as before when it does so once."""

import inspect

from pecan import core
from pecan import expose
from pecan import routing
from pecan import util
import testtools

from cyborg.compat import pecan as pecan_compat


class Controller:

    def one(self, a, b=1):
        return a


class PecanTest(testtools.TestCase):

    def test_pecan_core_asks_getargspec_by_name(self):
        # What the cache replaces: a module global of pecan.core that
        # its request handling calls.
        source = inspect.getsource(core)
        self.assertIn('from .util import _cfg, getargspec', source)
        self.assertIn('getargspec(controller)', source)

    def test_cache_argspecs(self):
        before = core.getargspec
        self.addCleanup(setattr, core, 'getargspec', before)
        core.getargspec = util.getargspec
        self.assertFalse(pecan_compat.argspecs_cached())
        pecan_compat.cache_argspecs()
        self.assertTrue(pecan_compat.argspecs_cached())
        cached = core.getargspec
        pecan_compat.cache_argspecs()
        self.assertIs(cached, core.getargspec)
        self.assertEqual(tuple(util.getargspec(Controller().one)),
                         tuple(core.getargspec(Controller().one)))


class Counted:
    """A controller that counts how often its attributes are listed."""

    listed = 0

    def __dir__(self):
        type(self).listed += 1
        return super().__dir__()

    @expose(route='some-path')
    def some_path(self):
        return 'custom'

    @expose()
    def index(self):
        return 'index'


class Root:

    def __init__(self):
        self.counted = Counted()


class Clash:

    taken = 1

    @expose(route='taken')
    def other(self):
        return 'clash'


class RoutesTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        before = routing._detect_custom_path_segments
        self.addCleanup(setattr, routing, '_detect_custom_path_segments',
                        before)
        routing._detect_custom_path_segments = self.original = getattr(
            before, '__wrapped__', before)

    def walk(self, root, *path):
        return routing.find_object(root, list(path), [], None)

    def test_routing_asks_by_name_and_marks_classes_seen(self):
        # What detect_routes_once relies on: pecan's routing calls the
        # module global for each controller it walks through, and a class
        # it saw is in __observed_controllers__.
        self.assertIn('_detect_custom_path_segments(obj)',
                      inspect.getsource(routing.find_object))
        self.assertIsInstance(routing.__observed_controllers__, set)
        self.walk(Root(), 'counted', 'some-path')
        self.assertIn(Counted, routing.__observed_controllers__)

    def test_attributes_listed_once_per_class(self):
        self.assertFalse(pecan_compat.routes_detected_once())
        pecan_compat.detect_routes_once()
        self.assertTrue(pecan_compat.routes_detected_once())
        once = routing._detect_custom_path_segments
        pecan_compat.detect_routes_once()
        self.assertIs(once, routing._detect_custom_path_segments)
        root = Root()
        # The custom route is found, as without the shim, and a request
        # that walks the same class again lists nothing more.
        found, rest = self.walk(root, 'counted', 'some-path')
        self.assertEqual(('custom', []), (found(), rest))
        listed = Counted.listed
        found, rest = self.walk(root, 'counted', 'some-path')
        self.assertEqual(('custom', []), (found(), rest))
        found, _rest = self.walk(Root(), 'counted', '')
        self.assertEqual('index', found())
        self.assertEqual(listed, Counted.listed)

    def test_a_clash_is_still_found_the_first_time(self):
        pecan_compat.detect_routes_once()
        self.assertRaisesRegex(RuntimeError, 'custom path segment',
                               self.walk, Clash(), 'taken')

    def test_without_it_pecan_lists_them_each_time(self):
        # The cost the shim saves (so that the test above can fail).
        root = Root()
        self.walk(root, 'counted', 'some-path')
        listed = Counted.listed
        self.walk(root, 'counted', 'some-path')
        self.assertGreater(Counted.listed, listed)
