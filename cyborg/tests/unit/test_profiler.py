"""cyborg.common.profiler: what of a trace crosses RPC (ids, never a key),
whom a receiver lets start traces, and spans that end in their thread."""

from unittest import mock

import fixtures
from keystoneauth1 import session as ks_session
from oslo_config import cfg
from oslo_utils import uuidutils
from osprofiler import notifier
from osprofiler import profiler as osp
from osprofiler import web
import requests
import webob

from cyborg.common import context
from cyborg.common import keys
from cyborg.common import profiler
from cyborg.common import rpc
from cyborg.tests import base

OWN_KEY = 'conductor-key'
CALLER_KEY = 'nova-key'


class _Traced(base.TestCase):

    def setUp(self):
        super().setUp()
        osp.clean()
        self.addCleanup(osp.clean)
        self.notes = []
        original = notifier.get()
        notifier.set(self.notes.append)
        self.addCleanup(notifier.set, original)
        # As after setup() with [profiler] hmac_keys = OWN_KEY, other.
        self.useFixture(fixtures.MockPatchObject(profiler, '_KEY',
                                                 [OWN_KEY]))
        self.base_id = uuidutils.generate_uuid()
        self.parent_id = uuidutils.generate_uuid()

    def ids(self):
        return {'base_id': self.base_id, 'parent_id': self.parent_id}


class TraceIdsTest(base.TestCase):

    def test_only_uuids_under_known_names(self):
        a, b = uuidutils.generate_uuid(), uuidutils.generate_uuid()
        self.assertEqual({'base_id': a, 'parent_id': b},
                         profiler.trace_ids({'base_id': a, 'parent_id': b}))
        self.assertEqual({'base_id': a}, profiler.trace_ids({'base_id': a}))
        for bad in (None, 'x', [a], {'parent_id': b},
                    {'base_id': 'not-a-uuid'}, {'base_id': 1},
                    {'base_id': a, 'parent_id': None},
                    # osprofiler's own field, carried by others' RPC.
                    {'base_id': a, 'parent_id': b, 'hmac_key': 'k'}):
            self.assertIsNone(profiler.trace_ids(bad), bad)


class OutgoingTest(_Traced):

    def wire(self):
        ctx = context.RequestContext(user_id='u', project_id='p')
        return rpc.RequestContextSerializer().serialize_context(ctx)

    def test_no_trace_no_field(self):
        self.assertNotIn(profiler.CONTEXT_KEY, self.wire())

    def test_ids_of_the_current_span_and_no_key(self):
        osp.init(CALLER_KEY, **self.ids())
        with osp.Trace('wsgi'):
            current = osp.get().get_id()
            wire = self.wire()
        self.assertEqual({'base_id': self.base_id, 'parent_id': current},
                         wire[profiler.CONTEXT_KEY])
        self.assertNotIn(CALLER_KEY, repr(wire))
        self.assertNotIn(OWN_KEY, repr(wire))

    def test_a_trace_without_a_key_is_not_passed_on(self):
        osp.init(None, **self.ids())
        self.assertNotIn(profiler.CONTEXT_KEY, self.wire())


class ServingTest(_Traced):

    def serve(self, sender, trace_info, method='arq_apply_patch'):
        seen = {}
        with profiler.serving(trace_info, sender, method):
            current = osp.get()
            if current is not None:
                seen.update(key=current.hmac_key,
                            base_id=current.get_base_id(),
                            headers=web.get_trace_id_headers(),
                            onward=profiler.add_trace_info({}))
        self.assertIsNone(osp.get(), 'the thread keeps a profiler')
        return seen

    def test_the_api_and_the_conductor_are_joined_with_our_key(self):
        for sender in (keys.API, keys.CONDUCTOR):
            self.notes.clear()
            seen = self.serve(sender, self.ids())
            self.assertEqual(OWN_KEY, seen['key'])
            self.assertEqual(self.base_id, seen['base_id'])
            # Placement and Nova get signed headers; RPC passes ids on.
            self.assertIn(web.X_TRACE_HMAC, seen['headers'])
            self.assertEqual(self.base_id,
                             seen['onward'][profiler.CONTEXT_KEY]['base_id'])
            start, stop = self.notes
            self.assertEqual(('rpc-start', 'rpc-stop'),
                             (start['name'], stop['name']))
            self.assertEqual((self.base_id, self.parent_id),
                             (start['base_id'], start['parent_id']))
            self.assertEqual('arq_apply_patch',
                             start['info']['function']['name'])

    def test_an_agent_only_attaches_spans(self):
        for sender in (keys.host_identity('cmp-1'), None):
            self.notes.clear()
            seen = self.serve(sender, self.ids())
            self.assertIsNone(seen['key'])
            self.assertEqual(self.base_id, seen['base_id'])
            # Nothing onward: no signed header, no ids over RPC.
            self.assertEqual({}, seen['headers'])
            self.assertEqual({}, seen['onward'])
            self.assertEqual(2, len(self.notes))

    def test_bad_ids_or_tracing_off_trace_nothing(self):
        self.assertEqual({}, self.serve(keys.API, {'base_id': 'x'}))
        self.assertEqual({}, self.serve(keys.API, None))
        with mock.patch.object(profiler, '_KEY', []):
            self.assertEqual({}, self.serve(keys.API, self.ids()))
        self.assertEqual([], self.notes)

    def test_in_the_senders_thread_a_span_of_its_trace(self):
        osp.init(CALLER_KEY, **self.ids())
        with profiler.serving(self.ids(), keys.host_identity('h'), 'm'):
            self.assertEqual(CALLER_KEY, osp.get().hmac_key)
        self.assertIsNotNone(osp.get())
        self.assertEqual(['rpc-start', 'rpc-stop'],
                         [n['name'] for n in self.notes])


class _Answer(requests.adapters.BaseAdapter):
    """A transport that keeps the headers of what it is sent and
    answers 200."""

    def __init__(self):
        super().__init__()
        self.sent = []

    def send(self, request, **kwargs):
        self.sent.append(dict(request.headers))
        response = requests.Response()
        response.status_code = 200
        response.request = request
        return response

    def close(self):
        pass


class OutgoingHTTPTest(_Traced):
    """keystoneauth (cyborg's clients of Placement, Nova and Glance)
    signs the trace on, with the receiver's key, for trusted senders
    only."""

    def headers_sent(self, sender):
        session = ks_session.Session()
        answer = _Answer()
        session.session.mount('http://', answer)
        with profiler.serving(self.ids(), sender, 'device_set_status'):
            session.get('http://placement.test/resource_providers',
                        authenticated=False)
        return answer.sent[0]

    def joined(self, headers, key):
        """(base id, parent id) of the trace a service configured with
        ``key`` joins on ``headers`` (osprofiler's middleware); None when
        it serves them untraced."""
        seen = []

        def app(environ, start_response):
            current = osp.get()
            seen.append(current and (current.get_base_id(),
                                     current.get_parent_id()))
            start_response('200 OK', [])
            return [b'']
        webob.Request.blank('/', headers=headers).get_response(
            web.WsgiMiddleware(app, hmac_keys=key, enabled=True))
        osp.clean()
        return seen[0]

    def test_placement_joins_under_the_rpc_span(self):
        headers = self.headers_sent(keys.API)
        rpc_span = self.notes[0]['trace_id']
        self.assertEqual((self.base_id, rpc_span),
                         self.joined(headers, OWN_KEY))
        # Signed with the conductor's key, not one it was sent.
        self.assertIsNone(self.joined(headers, CALLER_KEY))

    def test_nothing_signed_for_an_agent(self):
        headers = self.headers_sent(keys.host_identity('cmp-1'))
        self.assertNotIn(web.X_TRACE_INFO, headers)
        self.assertNotIn(web.X_TRACE_HMAC, headers)


class SetupTest(base.TestCase):

    def test_off_by_default(self):
        with mock.patch.object(profiler, '_KEY', []):
            self.assertFalse(profiler.setup(self.conf, 'api', 'h'))
        self.assertEqual('otlp://127.0.0.1:4318',
                         self.conf.profiler.connection_string)
        # Once on, statements and HTTP requests are traced.
        self.assertTrue(self.conf.profiler.trace_sqlalchemy)
        self.assertTrue(self.conf.profiler.trace_requests)
        app = object()
        self.assertIs(app, profiler.wsgi_middleware(app, self.conf))
        self.assertFalse(profiler.traces_statements(self.conf))

    def test_a_configuration_without_the_group_is_off(self):
        conf = cfg.ConfigOpts()
        conf([], default_config_files=[])
        self.assertFalse(profiler.enabled(conf))
        self.assertFalse(profiler.traces_statements(conf))

    def test_no_key_no_tracing(self):
        self.flags(group='profiler', enabled=True, hmac_keys=' , ')
        with mock.patch.object(profiler, '_KEY', []), \
                mock.patch.object(profiler.initializer,
                                  'init_from_conf') as init:
            self.assertFalse(profiler.setup(self.conf, 'api', 'h'))
        init.assert_not_called()

    def test_once_with_the_first_key(self):
        self.flags(group='profiler', enabled=True, hmac_keys='k1, k2')
        with mock.patch.object(profiler, '_KEY', []), \
                mock.patch.object(profiler.initializer,
                                  'init_from_conf') as init:
            self.assertTrue(profiler.setup(self.conf, 'conductor', 'h'))
            self.assertTrue(profiler.setup(self.conf, 'agent', 'h'))
            self.assertEqual(['k1'], profiler._KEY)
        init.assert_called_once_with(self.conf, context=None,
                                     project='cyborg', service='conductor',
                                     host='h')
