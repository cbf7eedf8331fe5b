"""What cyborg.api.app changes in pecan: the argument lists of controller
methods, looked for once per function."""

from pecan import core as pecan_core
from pecan import util as pecan_util
import testtools

from cyborg.api import app  # noqa: F401  (has pecan cache argspecs)
from cyborg.api.controllers.v2 import accelerator_requests
from cyborg.api.controllers.v2 import device_profiles
from cyborg.compat import pecan as pecan_compat


class Controller:

    def one(self, a, b=1):
        return a

    def any(self, *args, **kwargs):
        return args


class ArgspecTest(testtools.TestCase):

    def test_pecan_asks_the_cached_lookup(self):
        self.assertTrue(pecan_core.getargspec.cyborg_cached)

    def test_same_answers_as_pecan(self):
        methods = [
            accelerator_requests.AcceleratorRequestsController().index_get,
            accelerator_requests.AcceleratorRequestsController().index_post,
            accelerator_requests.AcceleratorRequestController('u').index_get,
            device_profiles.DeviceProfilesController().index_get,
            Controller().one, Controller().any, Controller.one]
        for method in methods:
            for _ in range(2):
                self.assertEqual(tuple(pecan_util.getargspec(method)),
                                 tuple(pecan_core.getargspec(method)))

    def test_looked_for_once_per_function(self):
        seen = []

        def lookup(method):
            seen.append(method)
            return pecan_util.getargspec(method)
        cached = pecan_compat.cached_argspecs(lookup)
        first, second = Controller(), Controller()
        self.assertEqual(['self', 'a', 'b'], cached(first.one).args)
        self.assertEqual(['self', 'a', 'b'], cached(second.one).args)
        self.assertEqual(['self', 'a', 'b'], cached(Controller.one).args)
        self.assertEqual(1, len(seen))
        self.assertEqual('kwargs', cached(first.any).keywords)
        self.assertEqual(2, len(seen))
