"""Every route of the API answers alike whether the request says
``Accept: application/json``, ``Accept: */*`` or nothing (what
keystoneauth adapters, curl and python-cyborgclient send), and answers
JSON or no body at all.

``ROUTES`` names one request per handler. The test records which
handler served each request and fails when a handler of
``cyborg.api.controllers`` was served by none, so a new route cannot be
left out.
"""


import fixtures
import pecan
from pecan import hooks as pecan_hooks

from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import routes

U = '0b7d3e52-7c4f-4d7e-9a61-3f1d2c5b8e90'
ACCEPTS = ({'Accept': 'application/json'}, {'Accept': '*/*'}, {})
ADMIN_SERVICE = dict(base.ADMIN, **{'X-Service-Roles': 'service'})

# (method, path, microversion, JSON body or None)
ROUTES = [
    ('GET', '/', None, None),
    ('GET', '/v1', None, None),
    ('GET', '/v2', None, None),
    ('GET', '/v1/accelerators', None, None),
    ('POST', '/v1/accelerators', None, {}),
    ('GET', '/v1/accelerators/' + U, None, None),
    ('POST', '/v1/accelerators/' + U, None, {}),
    ('PUT', '/v1/accelerators/' + U, None, {}),
    ('DELETE', '/v1/accelerators/' + U, None, None),
    ('PUT', '/v1/accelerators/%s/acc_specs' % U, None, {}),
    ('GET', '/v2/device_profiles', None, None),
    ('POST', '/v2/device_profiles', None, {}),
    ('DELETE', '/v2/device_profiles?value=nope', None, None),
    ('GET', '/v2/device_profiles/' + U, None, None),
    ('DELETE', '/v2/device_profiles/' + U, None, None),
    ('GET', '/v2/accelerator_requests', None, None),
    ('POST', '/v2/accelerator_requests', None, {}),
    ('PATCH', '/v2/accelerator_requests', None, {}),
    ('DELETE', '/v2/accelerator_requests?arqs=' + U, None, None),
    ('GET', '/v2/accelerator_requests/' + U, None, None),
    ('PATCH', '/v2/accelerator_requests/' + U, None, {}),
    ('DELETE', '/v2/accelerator_requests/' + U, None, None),
    ('GET', '/v2/deployables', None, None),
    ('GET', '/v2/deployables/' + U, None, None),
    ('PATCH', '/v2/deployables/%s/program' % U, None, []),
    ('GET', '/v2/devices', None, None),
    ('GET', '/v2/devices/' + U, None, None),
    ('POST', '/v2/devices/%s/enable' % U, None, None),
    ('POST', '/v2/devices/%s/disable' % U, None, None),
    ('GET', '/v2/attributes', None, None),
    ('POST', '/v2/attributes', None, {}),
    ('GET', '/v2/attributes/' + U, None, None),
    ('DELETE', '/v2/attributes/' + U, None, None),
    ('GET', '/v2/hosts', '2.5', None),
    ('GET', '/v2/hosts/nohost', '2.5', None),
    ('GET', '/v2/drivers', '2.5', None),
    ('POST', '/v2/drivers', '2.5', {}),
    ('PATCH', '/v2/drivers/nodriver', '2.5', {}),
    ('DELETE', '/v2/drivers/nodriver', '2.5', None),
    ('GET', '/v2/services', '2.5', None),
    ('POST', '/v2/discovery', '2.5', {'timeout': 0}),
    ('POST', '/v2/attachments', '2.5', {}),
    ('DELETE', '/v2/attachments/' + U, '2.5', None),
    ('GET', '/v2/hardware', '2.6', None),
]


def _name_of(handler):
    return '%s.%s' % (handler.__module__, handler.__qualname__)


def exposed_handlers():
    """Every function of ``cyborg.api.controllers`` that pecan can route
    a request to (not the 405 default of a generic controller, nor
    ``_lookup``), by qualified name."""
    return {_name_of(handler): handler for handler in routes.handlers()}


class _Recorder(pecan_hooks.PecanHook):
    """Remembers the handler that pecan chose for each request."""

    def __init__(self):
        self.served = set()

    def before(self, state):
        self.served.add(_name_of(state.controller))


class AcceptTest(base.APIResourceTestCase):

    def setUp(self):
        super().setUp()
        self.recorder = _Recorder()
        make_app = pecan.make_app

        def recording_make_app(root, hooks=(), **kwargs):
            return make_app(root, hooks=[*hooks, self.recorder], **kwargs)

        self.useFixture(fixtures.MonkeyPatch('pecan.make_app',
                                             recording_make_app))

    def test_every_route_answers_json_to_all_three_accepts(self):
        for method, path, version, body in ROUTES:
            answers = []
            for accept in ACCEPTS:
                response = self.request(
                    method, path, body=body, version=version,
                    headers=dict(ADMIN_SERVICE, **accept))
                answers.append((response.status_int,
                                response.content_type or None))
                if response.body:
                    self.assertEqual('application/json',
                                     response.content_type,
                                     (method, path, accept))
                    response.json  # noqa: B018 (it parses)
            where = '%s %s: %s' % (method, path, answers)
            self.assertNotIn(406, [status for status, _type in answers],
                             where)
            self.assertEqual(1, len(set(answers)), where)
        missed = set(exposed_handlers()) - self.recorder.served
        self.assertEqual(set(), missed,
                         'handlers that no request of ROUTES reached')

    def test_a_request_refusing_json_is_406(self):
        for accept in ('text/html', 'application/xml',
                       'application/json;q=0'):
            response = self.request('GET', '/v2/devices',
                                    headers=dict(base.ADMIN, Accept=accept))
            self.assert_error(response, 406, 'JSON')
        response = self.request('GET', '/v2/devices', headers=dict(
            base.ADMIN, Accept='text/html,application/xml;q=0.9,*/*;q=0.8'))
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual('application/json', response.content_type)
