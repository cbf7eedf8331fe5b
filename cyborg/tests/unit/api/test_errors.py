"""Exceptions and error responses: status mapping and the envelope."""

import json
from unittest import mock

import fixtures
import oslo_messaging
import pecan
import testtools
import webob
import webob.exc
import wsme.exc

from cyborg.api import errors
from cyborg.api import hooks
from cyborg.api.middleware import parsable_error
from cyborg.common import exception


def fault_of(response):
    """The inner fault of an error response, checking the envelope."""
    assert response.content_type == 'application/json', response.headers
    outer = json.loads(response.body)
    assert list(outer) == ['error_message'], outer
    return json.loads(outer['error_message'])


class StatusAndMessageTest(testtools.TestCase):

    def test_cyborg_exceptions_map_to_their_code(self):
        cases = [(exception.Invalid(reason='bad'), 400),
                 (exception.NotAuthorized(), 401),
                 (exception.PolicyNotAuthorized(action='x:y'), 403),
                 (exception.HostNotFound(host='h1'), 404),
                 (exception.InvalidAPIVersion(reason='no'), 406),
                 (exception.DuplicateName(resource='r', name='n'), 409),
                 (exception.ServiceUnavailable(reason='later'), 503),
                 (exception.CyborgException(), 500)]
        for exc, status in cases:
            self.assertEqual((status, str(exc)),
                             errors.status_and_message(exc))

    def test_webob_exceptions(self):
        self.assertEqual((404, 'The resource could not be found.'),
                         errors.status_and_message(webob.exc.HTTPNotFound()))
        self.assertEqual((405, 'Method Not Allowed'),
                         errors.status_and_message(
                             webob.exc.HTTPMethodNotAllowed()))
        self.assertEqual((400, 'why'), errors.status_and_message(
            webob.exc.HTTPBadRequest(detail='why')))

    def test_wsme_client_errors(self):
        self.assertEqual((400, 'wrong type'), errors.status_and_message(
            wsme.exc.ClientSideError('wrong type')))

    def test_conductor_timeout_is_503(self):
        status, message = errors.status_and_message(
            oslo_messaging.MessagingTimeout('no answer'))
        self.assertEqual(503, status)
        self.assertIn('conductor did not answer', message)

    def test_a_bus_that_takes_nothing_is_503(self):
        status, message = errors.status_and_message(
            oslo_messaging.MessageDeliveryFailure('404 no exchange cyborg'))
        self.assertEqual(503, status)
        self.assertIn('no cyborg conductor started yet', message)
        self.assertNotIn('404', message)

    def test_a_missing_key_names_its_party_and_command_not_its_path(self):
        log = self.useFixture(fixtures.FakeLogger('cyborg.api.errors'))
        for exc, party, command in (
                (exception.RPCKeyMissing(
                    identity='api', reason='/etc/cyborg/keys/api.key: No '
                    'such file or directory'), 'the API (api)', '--api'),
                (exception.RPCKeyMissing(
                    identity='host:cmp-1', reason='/etc/cyborg/keys/'
                    'host.cmp-1.key holds no key'), 'compute host cmp-1',
                 '--host cmp-1')):
            status, message = errors.status_and_message(exc)
            self.assertEqual(503, status)
            self.assertIn(party, message)
            self.assertIn('"cyborg-status keys create %s"' % command,
                          message)
            self.assertNotIn('/etc/cyborg', message)
            # The operator finds the path in the log.
            self.assertIn(str(exc), log.output)

    def test_an_open_key_file_is_not_named_to_clients(self):
        exc = exception.RPCKeyInsecure(path='/etc/cyborg/keys/api.key',
                                       mode='0644')
        status, message = errors.status_and_message(exc)
        self.assertEqual(503, status)
        self.assertIn('chmod 600', message)
        self.assertNotIn('/etc/cyborg', message)

    def test_unknown_exceptions_are_generic_and_logged(self):
        log = self.useFixture(fixtures.FakeLogger('cyborg.api.errors'))
        status, message = errors.status_and_message(
            RuntimeError('password=secret'))
        self.assertEqual(500, status)
        self.assertEqual(errors.GENERIC_MESSAGE, message)
        self.assertIn('password=secret', log.output)
        self.assertIn('RuntimeError', log.output)

    def test_envelope(self):
        self.assertEqual(
            {'faultcode': 'Client', 'faultstring': 'no', 'debuginfo': None},
            json.loads(errors.envelope(404, 'no')['error_message']))
        self.assertEqual('Server', json.loads(
            errors.envelope(503, 'x')['error_message'])['faultcode'])


def _app(status, body, content_type='application/json', headers=()):
    def app(environ, start_response):
        start_response(status, [('Content-Type', content_type),
                                *headers])
        return [body]
    return parsable_error.ParsableErrorMiddleware(app)


def _get(app, method='GET'):
    return webob.Request.blank('/v2/x', method=method).get_response(app)


class ParsableErrorMiddlewareTest(testtools.TestCase):

    def test_wsme_fault_is_wrapped(self):
        body = json.dumps({'faultcode': 'Client', 'faultstring': 'bad uuid',
                           'debuginfo': 'Traceback...'}).encode()
        response = _get(_app('400 Bad Request', body, headers=[('X-A', 'b')]))
        self.assertEqual(400, response.status_int)
        self.assertEqual({'faultcode': 'Client', 'faultstring': 'bad uuid',
                          'debuginfo': None}, fault_of(response))
        self.assertEqual('b', response.headers['X-A'])
        self.assertEqual(str(len(response.body)),
                         response.headers['Content-Length'])

    def test_keystonemiddleware_error_is_wrapped(self):
        body = json.dumps({'error': {'code': 401, 'title': 'Unauthorized',
                                     'message': 'Authenticate first.'}})
        response = _get(_app('401 Unauthorized', body.encode()))
        self.assertEqual('Authenticate first.',
                         fault_of(response)['faultstring'])

    def test_text_body_gives_the_reason_phrase(self):
        response = _get(_app('502 Bad Gateway', b'<html>oops</html>',
                             content_type='text/html'))
        self.assertEqual({'faultcode': 'Server', 'faultstring': 'Bad Gateway',
                          'debuginfo': None}, fault_of(response))

    def test_envelope_is_left_alone(self):
        body = json.dumps(errors.envelope(409, 'taken')).encode()
        response = _get(_app('409 Conflict', body))
        self.assertEqual(body, response.body)

    def test_success_and_head_are_left_alone(self):
        self.assertEqual(b'<ok/>', _get(_app('200 OK', b'<ok/>',
                                             'text/xml')).body)
        self.assertEqual(b'', _get(_app('404 Not Found', b'x'),
                                   method='HEAD').body)

    def test_escaped_exception_is_a_generic_500(self):
        def app(environ, start_response):
            raise ValueError('internal detail')
        self.useFixture(fixtures.FakeLogger('cyborg.api.errors'))
        response = _get(parsable_error.ParsableErrorMiddleware(app))
        self.assertEqual(500, response.status_int)
        fault = fault_of(response)
        self.assertEqual(errors.GENERIC_MESSAGE, fault['faultstring'])
        self.assertNotIn('internal detail', response.text)


class _Body(list):
    """An application's body that knows whether it was closed."""

    closed = False

    def close(self):
        self.closed = True


def _call(app, method='GET'):
    """(status, headers, body bytes, the iterable returned) of ``app``
    called as a WSGI server calls it."""
    started = []
    environ = webob.Request.blank('/v2/x', method=method).environ
    returned = app(environ, lambda status, headers, exc_info=None:
                   started.append((status, headers)))
    body = b''.join(returned)
    return started[-1][0], dict(started[-1][1]), body, returned


class LeanParsableErrorTest(testtools.TestCase):
    """The middleware in plain WSGI: what it passes on untouched, and the
    applications that answer in the ways WSGI allows."""

    def test_a_success_goes_through_as_made(self):
        body = _Body([b'{"a": 1}'])

        def app(environ, start_response):
            start_response('200 OK', [('Content-Type', 'application/json')])
            return body
        environ = webob.Request.blank('/v2/x').environ
        started = []
        with mock.patch('webob.request.BaseRequest.__init__',
                        side_effect=AssertionError('a webob request')):
            returned = parsable_error.ParsableErrorMiddleware(app)(
                environ, lambda *args: started.append(args))
        # The application's own iterable, no webob request made for it.
        self.assertIs(body, returned)
        status, _headers, content, _ = _call(
            parsable_error.ParsableErrorMiddleware(app))
        self.assertEqual(('200 OK', b'{"a": 1}'), (status, content))

    def test_a_head_answer_sends_no_body(self):
        body = _Body([b'x'])

        def app(environ, start_response):
            start_response('404 Not Found', [('Content-Length', '1')])
            return body
        status, headers, content, _ = _call(
            parsable_error.ParsableErrorMiddleware(app), method='HEAD')
        self.assertEqual(('404 Not Found', '1', b''),
                         (status, headers['Content-Length'], content))
        self.assertTrue(body.closed)

    def test_start_response_once_iterated(self):
        def app(status, chunks):
            def wsgi(environ, start_response):
                start_response(status, [('Content-Type', 'text/plain')])
                yield from chunks
            return parsable_error.ParsableErrorMiddleware(wsgi)
        status, _headers, content, _ = _call(app('200 OK', [b'a', b'b']))
        self.assertEqual(('200 OK', b'ab'), (status, content))
        status, headers, content, _ = _call(
            app('409 Conflict', [b'taken ', b'already']))
        self.assertEqual('409 Conflict', status)
        self.assertEqual('application/json', headers['Content-Type'])
        self.assertEqual('Conflict',
                         json.loads(json.loads(content)['error_message'])[
                             'faultstring'])

    def test_an_error_written_and_returned_is_read_whole(self):
        body = _Body([b'"error": {"message": "no such thing"}}'])

        def app(environ, start_response):
            write = start_response('404 Not Found',
                                   [('Content-Type', 'application/json')])
            write(b'{')
            return body
        status, headers, content, _ = _call(
            parsable_error.ParsableErrorMiddleware(app))
        self.assertEqual('404 Not Found', status)
        self.assertEqual('no such thing', json.loads(json.loads(content)[
            'error_message'])['faultstring'])
        self.assertEqual(str(len(content)), headers['Content-Length'])
        self.assertTrue(body.closed)

    def test_failures_while_the_body_is_read_are_a_generic_500(self):
        self.useFixture(fixtures.FakeLogger('cyborg.api.errors'))

        def failing(status):
            def app(environ, start_response):
                start_response(status, [])
                yield b'part'
                raise ValueError('internal detail')
            return parsable_error.ParsableErrorMiddleware(app)
        status, _headers, content, _ = _call(failing('500 Oops'))
        self.assertEqual('500 Internal Server Error', status)
        self.assertNotIn(b'internal detail', content)

    def test_a_started_success_that_fails_is_an_error(self):
        self.useFixture(fixtures.FakeLogger('cyborg.api.errors'))

        def app(environ, start_response):
            start_response('200 OK', [('Content-Type', 'text/plain')])
            raise ValueError('internal detail')
        status, headers, body, _ = _call(
            parsable_error.ParsableErrorMiddleware(app))
        self.assertEqual(('500 Internal Server Error', 'application/json'),
                         (status, headers['Content-Type']))
        self.assertNotIn(b'internal detail', body)

    def test_started_once_and_before_what_is_written(self):
        events = []

        def app(environ, start_response):
            write = start_response('200 OK', [('X-A', 'b')])
            write(b'a')
            return [b'b']

        def start_response(status, headers, exc_info=None):
            events.append(('start', status))
            return lambda data: events.append(('write', data))
        environ = webob.Request.blank('/v2/x').environ
        body = parsable_error.ParsableErrorMiddleware(app)(environ,
                                                           start_response)
        self.assertEqual([('start', '200 OK'), ('write', b'a')], events)
        self.assertEqual([b'b'], list(body))

        def failing(environ, start_response):
            start_response('200 OK', [])(b'a')
            raise ValueError('late')
        self.useFixture(fixtures.FakeLogger('cyborg.api.errors'))
        started = []
        parsable_error.ParsableErrorMiddleware(failing)(
            environ, lambda *args: started.append(args) or (lambda d: None))
        # Written already: the error replaces the success with exc_info,
        # as WSGI asks of a second start_response.
        self.assertEqual(['200 OK', '500 Internal Server Error'],
                         [args[0] for args in started])
        self.assertIsInstance(started[1][2][1], ValueError)

    def test_an_application_that_never_starts_is_a_500(self):
        self.useFixture(fixtures.FakeLogger('cyborg.api.errors'))
        status, _headers, _content, _ = _call(
            parsable_error.ParsableErrorMiddleware(
                lambda environ, start_response: _Body()))
        self.assertEqual('500 Internal Server Error', status)


class _Raiser:
    """A controller raising what the test puts in ``exc``."""

    exc = None

    @pecan.expose('json')
    def index(self):
        raise self.exc

    @pecan.expose('json')
    def redirect(self):
        pecan.redirect('/elsewhere', code=302)


class ErrorHookTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = _Raiser()
        self.app = pecan.make_app(self.root, hooks=[hooks.ErrorHook()],
                                  force_canonical=False, errors={})

    def _raise(self, exc):
        self.root.exc = exc
        return webob.Request.blank('/').get_response(self.app)

    def test_cyborg_exception(self):
        response = self._raise(exception.HostNotFound(host='h9'))
        self.assertEqual(404, response.status_int)
        self.assertEqual('Host h9 could not be found.',
                         fault_of(response)['faultstring'])

    def test_unknown_exception(self):
        self.useFixture(fixtures.FakeLogger('cyborg.api.errors'))
        response = self._raise(KeyError('secret'))
        self.assertEqual(500, response.status_int)
        self.assertNotIn('secret', response.text)

    def test_routing_404(self):
        response = webob.Request.blank('/nothing/here').get_response(
            self.app)
        self.assertEqual(404, response.status_int)
        self.assertEqual('Client', fault_of(response)['faultcode'])

    def test_redirects_pass(self):
        response = webob.Request.blank('/redirect').get_response(self.app)
        self.assertEqual(302, response.status_int)
        self.assertTrue(response.location.endswith('/elsewhere'))
