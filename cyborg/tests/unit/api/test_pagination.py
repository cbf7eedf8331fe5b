"""Paging parameters of list requests (microversion 2.4)."""

from urllib import parse

import webob

from cyborg.api import microversion
from cyborg.api import pagination
from cyborg.common import exception
from cyborg.db import pagination as db_pagination
from cyborg.tests import base

MARKER = '0d5c3c4e-5a43-4bd7-9d64-3a2b7c1e8f10'
SORT_KEYS = ('name', 'created_at')


def request(query='', version='2.4'):
    req = webob.Request.blank('/v2/device_profiles' + query,
                              base_url='http://cyborg.example:6666')
    req.version = microversion.parse(
        {microversion.HEADER: 'accelerator %s' % version})
    return req


class PageFromTest(base.TestCase):

    def test_before_2_4_everything(self):
        page = pagination.page_from(
            request('?limit=2&sort_key=bogus', version='2.3'), SORT_KEYS)
        self.assertEqual(db_pagination.Page(), page)

    def test_defaults_cap_at_max_limit(self):
        self.flags(max_limit=50, group='api')
        self.assertEqual(db_pagination.Page(limit=50),
                         pagination.page_from(request(), SORT_KEYS))
        self.assertEqual(50, pagination.page_from(
            request('?limit=500'), SORT_KEYS).limit)

    def test_all_parameters(self):
        page = pagination.page_from(request(
            '?limit=3&marker=%s&sort_key=name&sort_dir=desc' % MARKER),
            SORT_KEYS)
        self.assertEqual(db_pagination.Page(3, MARKER, 'name', 'desc'), page)

    def test_bad_values_are_400(self):
        for query in ('?limit=0', '?limit=-1', '?limit=x', '?marker=abc',
                      '?sort_key=id', '?sort_dir=up'):
            exc = self.assertRaises(exception.InvalidParameterValue,
                                    pagination.page_from, request(query),
                                    SORT_KEYS)
            self.assertEqual(400, exc.code, query)
            self.assertTrue(str(exc), query)


class CollectionTest(base.TestCase):

    def test_full_page_links_to_the_next(self):
        req = request('?limit=2&name=a,b&marker=%s' % MARKER)
        page = pagination.page_from(req, SORT_KEYS)
        items = [{'uuid': 'u1'}, {'uuid': 'u2'}]
        body = pagination.collection(req, 'device_profiles', items, page)
        self.assertEqual(items, body['device_profiles'])
        url = parse.urlsplit(body['next'])
        self.assertEqual('http://cyborg.example:6666/v2/device_profiles',
                         '%s://%s%s' % (url.scheme, url.netloc, url.path))
        self.assertEqual({'limit': ['2'], 'name': ['a,b'],
                          'marker': ['u2']}, parse.parse_qs(url.query))

    def test_last_page_has_no_next(self):
        req = request('?limit=3')
        page = pagination.page_from(req, SORT_KEYS)
        body = pagination.collection(req, 'x', [{'uuid': 'u1'}], page)
        self.assertEqual({'x': [{'uuid': 'u1'}]}, body)

    def test_no_paging_no_next(self):
        req = request(version='2.0')
        page = pagination.page_from(req, SORT_KEYS)
        body = pagination.collection(req, 'x', [{'uuid': 'u1'}], page)
        self.assertNotIn('next', body)

    def test_public_endpoint_is_the_base(self):
        self.flags(public_endpoint='https://cloud.example/accelerator',
                   group='api')
        req = request('?limit=1')
        page = pagination.page_from(req, SORT_KEYS)
        body = pagination.collection(req, 'x', [{'uuid': 'u1'}], page)
        self.assertTrue(body['next'].startswith(
            'https://cloud.example/accelerator/v2/device_profiles?'))
