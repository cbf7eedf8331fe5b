"""Hostile and oversized input through the whole API pipeline, on each
database: the 500s of issue 13 are 400s, the policy check comes before
the body is looked at, bodies are bounded (413) and every field is
bounded as the column it is stored in, which the databases confirm by
storing the largest value accepted."""

import json
import uuid

from oslo_middleware import sizelimit
import webob

from cyborg.db import models
from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import test_deployables

PROFILES = '/v2/device_profiles'
ARQS = '/v2/accelerator_requests'
ATTRIBUTES = '/v2/attributes'
GROUP = {'resources:FPGA': '1'}


def _utf8(doc):
    """JSON as UTF-8, not escaped to ASCII (what fits the body limit)."""
    return json.dumps(doc, ensure_ascii=False).encode()


class _InputTests(test_deployables.Inventory):

    def raw(self, method, path, body, headers=base.ADMIN, **environ):
        request = webob.Request.blank(path, method=method,
                                      headers=headers,
                                      base_url='http://localhost')
        request.body = body
        request.content_type = 'application/json'
        request.environ.update(environ)
        return request.get_response(self.app)

    def profiles(self):
        return self.rows(models.DeviceProfile)

    def test_lone_surrogates_are_400_for_members_too(self):
        for body in (b'{"device_profile_name": "\\ud800"}',
                     b'{"device_profile_name": "a", "x": ["\\udfff"]}'):
            self.assert_error(self.raw('POST', ARQS, body,
                                       headers=base.MEMBER),
                              400, 'lone UTF-16 surrogates')
        self.assert_error(self.raw('POST', PROFILES, json.dumps(
            [{'name': 'p', 'groups': [GROUP], 'description': '\ud800'}]
        ).encode()), 400, 'surrogates')

    def test_nul_is_400(self):
        self.assert_error(self.post(PROFILES, [
            {'name': 'p', 'groups': [GROUP], 'description': 'a\x00b'}]),
            400, 'NUL')
        self.assert_error(self.get(PROFILES + '?name=a%00'), 400,
                          'control characters')
        self.assert_error(self.get('/v2/hosts/a%00', version='2.5'), 400,
                          'control characters')
        self.assertEqual([], self.profiles())

    def test_deep_nesting_is_400_on_every_body(self):
        deep = b'[' * 1000 + b']' * 1000
        nova = dict(base.ADMIN, **{'X-Service-Roles': 'service'})
        for method, path in [('POST', PROFILES), ('POST', ARQS),
                             ('PATCH', ARQS), ('POST', ATTRIBUTES),
                             ('POST', '/v1/accelerators')]:
            self.assert_error(self.raw(method, path, deep, headers=nova),
                              400, 'nest deeper than 16 levels')

    def test_arq_patch_op_checked_after_the_service_token(self):
        arq = str(uuid.uuid4())
        for op in ({}, [], 5):
            body = {arq: [{'op': op, 'path': '/hostname', 'value': 'h'}]}
            self.assert_error(self.patch(ARQS, body, headers=base.MEMBER),
                              403, 'service token')
            self.assert_error(self.patch(ARQS, body, headers=base.MEMBER,
                                         service=True),
                              400, '%s/0/op' % arq)

    def test_deployable_id_beyond_the_column(self):
        for value in (2 ** 31, 2 ** 64, -2 ** 63 - 1, 10 ** 30):
            self.assert_error(self.get(ATTRIBUTES, deployable_id=value),
                              400, 'deployable_id')
            self.assert_error(self.post(ATTRIBUTES, {
                'deployable_id': value, 'key': 'k', 'value': 'v'}),
                400, 'deployable_id')

    def test_policy_before_the_body(self):
        for method, path in [('POST', PROFILES), ('POST', ATTRIBUTES),
                             ('POST', '/v1/accelerators')]:
            self.assert_error(self.raw(method, path, b'[' * 1000,
                                       headers=base.MEMBER), 403)
            self.assert_error(self.raw(method, path, b'{not json',
                                       headers=base.READER), 403)

    def test_a_body_is_never_taken_as_handler_arguments(self):
        self.assertEqual(201, self.post(PROFILES, [
            {'name': 'kept', 'groups': [GROUP]}]).status_int)
        self.assert_error(self.raw('DELETE', PROFILES,
                                   b'{"value": "kept"}'),
                          400, 'value: it is required')
        self.assert_error(self.raw(
            'DELETE', PROFILES, b'value=kept',
            CONTENT_TYPE='application/x-www-form-urlencoded'), 400)
        self.assertEqual(['kept'], [p.name for p in self.profiles()])

    def test_text_fields_hold_what_the_column_holds(self):
        """16,383 four-byte characters fill MySQL's 64 KiB TEXT; one
        more is a 400, on every database alike."""
        widest = '\U0001f600' * 16383
        self.assertEqual(201, self.raw('POST', PROFILES, _utf8(
            [{'name': 'wide', 'groups': [GROUP], 'description': widest}]),
        ).status_int)
        [row] = self.profiles()
        self.assertEqual(widest, row.description)
        self.assert_error(self.post(PROFILES, [
            {'name': 'wider', 'groups': [GROUP],
             'description': 'x' * 16384}]),
            400, '0/description: longer than 16383 characters')
        host = self.seed()
        fpga = self.deployable('%s_dev0' % host)
        response = self.raw('POST', ATTRIBUTES, _utf8(
            {'deployable_id': fpga.id, 'key': 'k' * 255, 'value': widest}))
        self.assertEqual(201, response.status_int, response.body[:300])
        self.assert_error(self.post(ATTRIBUTES, {
            'deployable_id': fpga.id, 'key': 'k2', 'value': 'v' * 16384}),
            400, 'value: longer than 16383 characters')

    def test_profile_groups_fit_their_column(self):
        many = [{'resources:FPGA': '1'}] * 65
        self.assert_error(self.post(PROFILES, [
            {'name': 'many', 'groups': many}]), 400, 'more than 64 items')
        large = [{'accel:k%d' % i: 'v' * 255 for i in range(64)}] * 5
        self.assert_error(self.post(PROFILES, [
            {'name': 'large', 'groups': large}]),
            400, '0/groups: takes')
        fits = [{'accel:k%d' % i: 'v' * 200 for i in range(30)}] * 10
        self.assertEqual(201, self.post(PROFILES, [
            {'name': 'fits', 'groups': fits}]).status_int)
        self.assertEqual(['fits'], [p.name for p in self.profiles()])


class BodySizeLimitTest(test_deployables.Inventory,
                        base.APIResourceTestCase):
    """[oslo_middleware] max_request_body_size, through the pipeline."""

    def setUp(self):
        super().setUp()
        self.conf.register_opts(sizelimit.OPTS, group='oslo_middleware')

    def test_large_bodies_are_413_before_anything_reads_them(self):
        description = 'x' * (10 * 1024 * 1024)
        response = self.post(PROFILES, [{'name': 'big', 'groups': [GROUP],
                                         'description': description}])
        self.assert_error(response, 413, 'larger than 114688 bytes')
        self.assert_error(response, 413, 'max_request_body_size')
        groups = [GROUP] * 437000
        self.assert_error(self.post(PROFILES, [{'name': 'g',
                                                'groups': groups}]), 413)
        self.assertEqual([], self.rows(models.DeviceProfile))

    def test_the_limit_is_an_option(self):
        self.flags(max_request_body_size=200, group='oslo_middleware')
        small = [{'name': 'small', 'groups': [GROUP]}]
        self.assertEqual(201, self.post(PROFILES, small).status_int)
        self.assert_error(self.post(PROFILES, [
            {'name': 'n', 'groups': [GROUP], 'description': 'x' * 200}]),
            413, 'larger than 200 bytes')

    def test_a_body_without_length_is_cut_at_the_limit(self):
        self.flags(max_request_body_size=200, group='oslo_middleware')
        request = webob.Request.blank(PROFILES, method='POST',
                                      headers=base.ADMIN,
                                      base_url='http://localhost')
        body = json.dumps([{'name': 'n', 'groups': [GROUP],
                            'description': 'x' * 300}]).encode()
        request.body_file_raw = _Chunks(body)
        request.content_type = 'application/json'
        request.environ.pop('CONTENT_LENGTH', None)
        request.environ['wsgi.input_terminated'] = True
        self.assert_error(request.get_response(self.app), 413,
                          'Larger than 200')


class _Chunks:
    """A body read in pieces, as a chunked upload arrives."""

    def __init__(self, data):
        self.data = data

    def read(self, size=-1):
        if size is None or size < 0:
            size = len(self.data)
        size = min(size, 64)
        chunk, self.data = self.data[:size], self.data[size:]
        return chunk


class SQLiteInputTest(_InputTests, base.APIResourceTestCase):
    backend = 'sqlite'


class MySQLInputTest(_InputTests, base.APIResourceTestCase):
    backend = 'mysql'


class PostgreSQLInputTest(_InputTests, base.APIResourceTestCase):
    backend = 'postgresql'
