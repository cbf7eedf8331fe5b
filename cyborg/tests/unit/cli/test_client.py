"""What the command line makes of URLs, error responses and its input."""

import json
import os

import fixtures
import requests
import testtools

from cyborg.api import errors
from cyborg.cli import accelerators
from cyborg.cli import client
from cyborg.cli import hosts
from cyborg.cli import output


def response(status, body=b'', reason='', content_type='application/json'):
    made = requests.Response()
    made.status_code = status
    made.reason = reason
    made._content = body if isinstance(body, bytes) else body.encode()
    made.headers['Content-Type'] = content_type
    return made


class ServiceRootTest(testtools.TestCase):

    def test_version_segments_and_slashes_go(self):
        for endpoint, root in [
                ('http://ctl:6666/v2', 'http://ctl:6666'),
                ('http://ctl:6666/v2/', 'http://ctl:6666'),
                ('http://ctl:6666/v1', 'http://ctl:6666'),
                ('http://ctl/accelerator/v2.0', 'http://ctl/accelerator'),
                ('http://ctl/accelerator/', 'http://ctl/accelerator'),
                ('http://127.0.0.1:6666', 'http://127.0.0.1:6666'),
                ('https://ctl/v2services', 'https://ctl/v2services')]:
            self.assertEqual(root, client.service_root(endpoint), endpoint)

    def test_path_segments_are_quoted(self):
        self.assertEqual('..%2Fdrivers%3Fx', client.quote('../drivers?x'))


class ErrorMessageTest(testtools.TestCase):

    def test_the_envelope(self):
        body = json.dumps(errors.envelope(404, 'Accelerator u1 could not '
                                               'be found.'))
        self.assertEqual('Accelerator u1 could not be found. (HTTP 404)',
                         client.error_message(response(404, body)))

    def test_multi_line_messages_become_one_line(self):
        body = json.dumps(errors.envelope(400, 'Invalid body:\n  bad'))
        self.assertEqual('Invalid body: bad (HTTP 400)',
                         client.error_message(response(400, body)))

    def test_other_shapes(self):
        cases = [
            ({'faultstring': 'plain fault'}, 'plain fault'),
            ({'error_message': 'not json'}, 'not json'),
            ({'error_message': {'faultstring': 'a dict'}}, 'a dict'),
            ({'message': 'a message'}, 'a message'),
        ]
        for doc, message in cases:
            self.assertEqual('%s (HTTP 409)' % message, client.error_message(
                response(409, json.dumps(doc), 'Conflict')))

    def test_text_and_empty_bodies(self):
        self.assertEqual('Bad gateway from the proxy (HTTP 502)',
                         client.error_message(response(
                             502, 'Bad gateway\nfrom the proxy',
                             'Bad Gateway', 'text/plain')))
        self.assertEqual('Service Unavailable (HTTP 503)',
                         client.error_message(response(
                             503, b'', 'Service Unavailable')))
        self.assertEqual('Request failed (HTTP 500)',
                         client.error_message(response(500, b'{}')))


class SpecTest(testtools.TestCase):

    def test_inline_json(self):
        self.assertEqual({'remote': 1},
                         accelerators.load_spec('{"remote": 1}'))

    def test_file(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'spec.json')
        with open(path, 'w') as f:
            json.dump({'acc_capability': {'x': 1}}, f)
        self.assertEqual({'acc_capability': {'x': 1}},
                         accelerators.load_spec('@' + path))

    def test_missing_file(self):
        e = self.assertRaises(client.CommandError, accelerators.load_spec,
                              '@/nonexistent/spec.json')
        self.assertEqual('Cannot read the spec file /nonexistent/spec.json: '
                         'No such file or directory', str(e))

    def test_bad_json_and_not_an_object(self):
        e = self.assertRaises(client.CommandError, accelerators.load_spec,
                              '{"remote": ')
        self.assertIn('--spec is not valid JSON', str(e))
        e = self.assertRaises(client.CommandError, accelerators.load_spec,
                              '[1]')
        self.assertEqual('--spec must be a JSON object, not list', str(e))


class LocationTest(testtools.TestCase):

    def test_uuid_of_location(self):
        self.assertEqual('u1', accelerators.uuid_from_location(
            'http://ctl:6666/v1/accelerators/u1'))
        self.assertEqual('u1', accelerators.uuid_from_location(
            'http://ctl:6666/v1/accelerators/u1/'))

    def test_no_location(self):
        self.assertRaises(client.CommandError,
                          accelerators.uuid_from_location, None)


class OutputTest(testtools.TestCase):

    def test_nested_values_are_json_in_a_table_and_data_otherwise(self):
        fields, row = output.show({'uuid': 'u1', 'acc_specs': {'num': 2},
                                   'links': [{'href': 'x'}]})
        self.assertEqual(['acc_specs', 'uuid'], fields)
        self.assertEqual('{"num": 2}', row[0].human_readable())
        self.assertEqual({'num': 2}, row[0].machine_readable())
        self.assertEqual('u1', row[1])

    def test_listing_keeps_the_field_order_and_fills_gaps(self):
        fields, rows = output.listing([{'b': 1, 'a': 2}, {'a': 3}],
                                      ('a', 'b'))
        self.assertEqual((('a', 'b'), [(2, 1), (3, None)]), (fields, rows))

    def test_host_drivers(self):
        column = hosts.DriversColumn([{'name': 'fake_driver',
                                       'status': 'READY'},
                                      {'name': 'pci_driver',
                                       'status': 'FAILED'}])
        self.assertEqual('fake_driver (READY), pci_driver (FAILED)',
                         column.human_readable())
        self.assertEqual('', hosts.DriversColumn([]).human_readable())
