"""Parsing of the OpenStack-API-Version header and the version list."""

import os
from unittest import mock

import testtools
import webob

from cyborg.api import microversion
from cyborg.common import exception

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                   '..', '..'))
HISTORY = os.path.join(TOP, 'doc', 'source', 'contributor',
                       'rest_api_version_history.rst')


def parse(value=None):
    headers = webob.Request.blank('/v2').headers
    if value is not None:
        headers[microversion.HEADER] = value
    return str(microversion.parse(headers))


class ParseEnvironTest(testtools.TestCase):
    """A WSGI request's version, read from its environ."""

    def test_without_the_header_the_minimum_unparsed(self):
        environ = webob.Request.blank('/v2', headers={
            'Accept': 'application/json', 'X-Other': 'a'}).environ
        with mock.patch.object(microversion.microversion_parse,
                               'get_version',
                               side_effect=AssertionError('parsed')):
            self.assertEqual(microversion.MIN_VERSION,
                             microversion.parse_environ(environ))

    def test_with_the_header_as_parse_says(self):
        for value in ('accelerator 2.2', 'latest', '2.1',
                      'accelerator latest', 'compute 2.60'):
            environ = webob.Request.blank(
                '/v2', headers={microversion.HEADER: value}).environ
            self.assertEqual(parse(value),
                             str(microversion.parse_environ(environ)), value)
        for value in ('accelerator 9.9', 'accelerator x'):
            environ = webob.Request.blank(
                '/v2', headers={microversion.HEADER: value}).environ
            self.assertRaises(exception.InvalidAPIVersion,
                              microversion.parse_environ, environ)


class ParseTest(testtools.TestCase):

    def test_no_header_is_the_minimum(self):
        self.assertEqual('2.0', parse())

    def test_standard_form(self):
        self.assertEqual('2.2', parse('accelerator 2.2'))
        self.assertEqual('2.1', parse('Accelerator 2.1'))

    def test_bare_form_for_older_clients(self):
        self.assertEqual('2.1', parse('2.1'))
        self.assertEqual('2.3', parse(' 2.3 '))

    def test_latest(self):
        self.assertEqual('2.6', parse('accelerator latest'))
        self.assertEqual('2.6', parse('latest'))

    def test_other_services_are_ignored(self):
        self.assertEqual('2.0', parse('compute 2.87'))
        self.assertEqual('2.1', parse('compute 2.87, accelerator 2.1'))

    def test_empty_header_is_the_minimum(self):
        self.assertEqual('2.0', parse(''))

    def _assert_406(self, value):
        exc = self.assertRaises(exception.InvalidAPIVersion, parse, value)
        self.assertEqual(406, exc.code)
        return str(exc)

    def test_out_of_range(self):
        for value in ('accelerator 2.99', 'accelerator 3.0', '1.9',
                      'accelerator 2.10'):
            self.assertIn('not supported', self._assert_406(value))

    def test_garbage(self):
        for value in ('accelerator two', 'abc', 'accelerator 2',
                      'accelerator 2.x'):
            self.assertIn('Invalid', self._assert_406(value))


class VersionsTest(testtools.TestCase):

    def test_range(self):
        self.assertEqual('2.0', str(microversion.MIN_VERSION))
        self.assertEqual('2.6', str(microversion.MAX_VERSION))

    def test_versions_are_consecutive_minors(self):
        minors = [int(v.split('.')[1]) for v, _note in microversion.VERSIONS]
        self.assertEqual(list(range(len(minors))), minors)

    def test_every_version_is_in_the_history(self):
        with open(HISTORY) as f:
            sections = {line.strip() for line in f}
        for version, _note in microversion.VERSIONS:
            self.assertIn(version, sections)

    def test_response_headers(self):
        version = microversion.parse({})
        self.assertEqual(
            {'OpenStack-API-Minimum-Version': '2.0',
             'OpenStack-API-Maximum-Version': '2.6',
             'OpenStack-API-Version': 'accelerator 2.0'},
            dict(microversion.response_headers(version)))
        self.assertNotIn(microversion.HEADER,
                         dict(microversion.response_headers(None)))

    def test_is_supported(self):
        request = webob.Request.blank('/v2')
        request.version = microversion.parse({microversion.HEADER:
                                              'accelerator 2.2'})
        self.assertTrue(microversion.is_supported(request, '2.2'))
        self.assertTrue(microversion.is_supported(request, '2.0'))
        self.assertFalse(microversion.is_supported(request, '2.3'))
