"""cyborg.compat.pecan on pecan's own core: the controller's argument
list is asked of ``pecan.core.getargspec`` at each request, and the cached
lookup answers as pecan's does."""

import inspect

from pecan import core
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
