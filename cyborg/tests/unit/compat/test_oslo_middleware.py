"""cyborg.compat.oslo_middleware on oslo.middleware's own middleware: an
option from the paste settings, else from [oslo_middleware]."""

from oslo_config import cfg
from oslo_middleware import sizelimit
import testtools

from cyborg.compat import oslo_middleware as middleware_compat


class OptionTest(testtools.TestCase):

    def test_from_oslo_config(self):
        conf = cfg.ConfigOpts()
        middleware = sizelimit.RequestBodySizeLimiter(None, conf)
        conf.set_override('max_request_body_size', 1234,
                          group='oslo_middleware')
        self.assertEqual(1234, middleware_compat.option(
            middleware, 'max_request_body_size'))

    def test_from_the_paste_settings(self):
        middleware = sizelimit.RequestBodySizeLimiter(
            None, {'max_request_body_size': '77'})
        self.assertEqual(77, middleware_compat.option(
            middleware, 'max_request_body_size'))
