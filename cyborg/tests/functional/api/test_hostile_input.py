"""A sweep of hostile input over every route of the API (v1, v2 and the
2.5 resources), enumerated from the controller tree: malformed and
pathological bodies, every field of a valid body replaced by values that
break naive code, hostile query parameters, path segments and headers.
Nothing may answer 5xx, and nothing rejected may write to the database.
"""

import copy
import importlib

from cyborg.tests.functional.api import hostile
from cyborg.tests.functional.api import routes

RP = 'rp_uuid'
DEPLOYABLE_ID = 'deployable_id'


def valid_bodies(ids):
    """{(method, path): a body the route accepts} for every route that
    takes one."""
    bind = [{'op': 'add', 'path': '/hostname', 'value': 'h'},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': ids[RP]},
            {'op': 'add', 'path': '/instance_uuid',
             'value': hostile.INSTANCE},
            {'op': 'add', 'path': '/project_id', 'value': 'p'}]
    spec = {'acc_specs': {'remote': 1, 'num': 16, 'device_type': 'FPGA',
                          'acc_capability': {'a': 'b'}},
            'spec_version': 1}
    return {
        ('POST', '/v1/accelerators'): {'name': 'n', 'uuid': ids[
            '/v1/accelerators']},
        ('POST', '/v1/accelerators/{id}'): {'name': 'n'},
        ('PUT', '/v1/accelerators/{id}'): {'instance_uuid': hostile.INSTANCE,
                                           'name': 'fuzz-acc'},
        ('PUT', '/v1/accelerators/{id}/acc_specs'): spec,
        ('POST', '/v2/accelerator_requests'): {
            'device_profile_name': hostile.PROFILE},
        ('PATCH', '/v2/accelerator_requests'): {
            ids['/v2/accelerator_requests']: bind},
        ('PATCH', '/v2/accelerator_requests/{id}'): {
            ids['/v2/accelerator_requests']: bind},
        ('POST', '/v2/attachments'): {
            'instance_uuid': hostile.INSTANCE,
            'device_profile_name': hostile.PROFILE, 'host': 'h'},
        ('POST', '/v2/attributes'): {DEPLOYABLE_ID: ids[DEPLOYABLE_ID],
                                     'key': 'k', 'value': 'v'},
        ('PATCH', '/v2/deployables/{id}/program'): [
            {'path': '/program', 'op': 'replace',
             'value': [{'image_uuid': ids['image']}]}],
        ('POST', '/v2/device_profiles'): [
            {'name': 'p', 'description': 'd', 'uuid': hostile.INSTANCE,
             'groups': [dict(hostile.GROUP, **{'accel:x': 'y'})]}],
        ('POST', '/v2/discovery'): {'host': 'h', 'timeout': 5},
        ('POST', '/v2/drivers'): {'name': 'fake_driver', 'host': 'h'},
        ('PATCH', '/v2/drivers/{id}'): {'host': 'h'},
        ('POST', '/v2/devices/{id}/enable'): {},
        ('POST', '/v2/devices/{id}/disable'): {},
    }


# Path segments that are other names of one resource.
ALIASES = {'accelerator': 'accelerators', 'acc_spec': 'acc_specs'}


def body_key(route):
    """The key of ``valid_bodies`` for a route: aliases share one."""
    return route.method, '/'.join(ALIASES.get(segment, segment)
                                  for segment in route.path.split('/'))


RAW_BODIES = [
    b'{', b'{"a": }', b'\xff\xfe\x00\x00', b'\xef\xbb\xbf{}', b'\x00',
    b'[' * 1000 + b']' * 1000, b'[' * 100000,
    b'{"a":' * 1000 + b'1' + b'}' * 1000,
    b'"\\ud800"', b'["\\udfff", "\\ud800\\u0000"]', b'{"\\ud800": 1}',
    b'NaN', b'[Infinity, -Infinity]', b'1e999', b'9' * 5000, b'-0',
    b'null', b'""', b'[]', b'{}', b'true', b'{"a": 1, "a": 2}',
]

HOSTILE_VALUES = [
    '\ud800', 'a\udfffb', '\x00', 'a\x00b', '', ' ', 'x' * 256,
    'x' * 70000, '\U0001f600' * 300, 'é' * 40000,
    2 ** 31, 2 ** 63, 2 ** 64, -2 ** 63 - 1, 10 ** 40, -1, 0, 1.5, 1e308,
    True, False, None, [], {}, [None] * 5, {'\ud800': 1},
    [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
    'ffffffff-ffff-ffff-ffff-ffffffffffff', '../../etc/passwd',
]

PAGING = ('limit', 'marker', 'sort_key', 'sort_dir')
QUERY_NAMES = ['limit', 'marker', 'sort_key', 'sort_dir', 'name', 'value',
               'instance', 'bind_state', 'arqs', 'deployable_id', 'key',
               'filters.field', 'filters.value', 'type', 'vendor',
               'hostname', 'host', 'device_type']
QUERY_VALUES = ['%00', '%FF', '%ED%A0%80', '9' * 30, '-9' * 15, '-1', '0',
                '', 'x' * 5000, 'a%2C' * 2000, '1.5', '%0A', 'resolved']
PATH_VALUES = ['%00', '%FF', '%ED%A0%80', 'x' * 5000, '9' * 30, '%2E%2E',
               'a%2Fb', '%20', 'a%2Cb%2C%2C']
HEADER_CASES = [
    {'OpenStack-API-Version': 'accelerator 2.99999999999999999999999'},
    {'OpenStack-API-Version': 'accelerator 9' * 200},
    {'OpenStack-API-Version': 'accelerator 2.'},
    {'OpenStack-API-Version': 'accelerator latest, accelerator 2.1'},
    {'Content-Type': 'application/json; charset=latin-1'},
    {'Content-Type': 'text/plain'},
    {'If-Match': '"99999999999999999999999999999"'},
    {'If-Match': 'W/"-1"'},
]


def query_names(route):
    """The query parameters a route may read: those of its resource's
    query schemas (``cyborg.api.schemas.<resource>``), and paging's."""
    names = set(PAGING)
    resource = route.path.split('/')[2] if route.path.count('/') > 1 else ''
    try:
        module = importlib.import_module('cyborg.api.schemas.%s'
                                         % ALIASES.get(resource, resource))
    except ImportError:
        return sorted(names)
    for name, schema in vars(module).items():
        if name.endswith('QUERY'):
            names.update(schema['properties'])
    return sorted(names)


def leaf_paths(doc, prefix=()):
    """Paths of every value inside ``doc`` (the root is ``()``)."""
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from leaf_paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from leaf_paths(value, prefix + (index,))


def replaced(doc, path, value):
    if not path:
        return value
    doc = copy.deepcopy(doc)
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return doc


# What the deterministic sweep replaces each field with (the fuzz test
# draws from all of HOSTILE_VALUES and more).
KILLERS = ['\ud800', 'a\x00b', 'x' * 70000, 2 ** 64, -2 ** 63 - 1, 1.5,
           True, None, {}, HOSTILE_VALUES[-3]]
QUERY_KILLERS = ['9' * 30, 'x' * 5000]
BODY_METHODS = ('POST', 'PUT', 'PATCH')


def mutations(body, values=KILLERS):
    """Every field of ``body`` (and the body itself) replaced by each
    of ``values``, each field removed, an unknown one added."""
    for path in leaf_paths(body):
        for value in values:
            yield replaced(body, path, value)
        if path:
            parent = replaced(body, path, None)
            container = parent
            for step in path[:-1]:
                container = container[step]
            del container[path[-1]]
            yield parent
    if isinstance(body, dict):
        yield dict(body, unknown='x')


class HostileInputSweep(hostile.World):
    """Each test sweeps one kind of input over every route it applies
    to, and lists every request that failed."""

    def sweep(self, cases):
        failures = []
        for what, kwargs in cases:
            response, writes = self.send(**kwargs)
            try:
                self.assert_no_5xx_and_no_write_when_rejected(
                    what, response, writes)
            except AssertionError as e:
                failures.append(str(e)[:600])
        self.assertEqual([], failures, '\n'.join(failures))

    def routes(self, methods=None):
        for route in routes.all_routes():
            if methods is None or route.method in methods:
                yield route, self.path_of(route), '%s %s' % (route.method,
                                                             route.path)

    def test_raw_bodies(self):
        self.sweep(('%s %r' % (what, raw[:40]),
                    dict(method=route.method, path=path, body=raw))
                   for route, path, what in self.routes(BODY_METHODS)
                   for raw in RAW_BODIES)

    def test_fields_of_valid_bodies(self):
        bodies = valid_bodies(self.ids)
        self.sweep(('%s %r' % (what, str(body)[:120]),
                    dict(method=route.method, path=path, body=body))
                   for route, path, what in self.routes(BODY_METHODS)
                   for body in mutations(bodies[body_key(route)]))

    def test_query_parameters(self):
        self.sweep(('%s ?%s=%s' % (what, name, value[:40]),
                    dict(method=route.method, path=path,
                         query='%s=%s' % (name, value)))
                   for route, path, what in self.routes(('GET', 'DELETE'))
                   for name in query_names(route)
                   for value in QUERY_KILLERS)

    def test_path_segments_and_headers(self):
        bodies = valid_bodies(self.ids)

        def cases():
            for route, path, what in self.routes():
                body = bodies.get(body_key(route), b'')
                if routes.PLACEHOLDER in route.path:
                    for value in PATH_VALUES:
                        yield '%s %s' % (what, value[:40]), dict(
                            method=route.method, body=body,
                            path=self.path_of(route, value))
                for headers in HEADER_CASES:
                    yield '%s %s' % (what, headers), dict(
                        method=route.method, path=path, body=body,
                        headers=dict(hostile.ADMIN_NOVA, **headers),
                        version=None)
        self.sweep(cases())

    def test_every_body_route_has_a_valid_body(self):
        bodies = valid_bodies(self.ids)
        takes_body = {body_key(r) for r in routes.all_routes()
                      if r.method in BODY_METHODS}
        self.assertEqual(set(), takes_body - set(bodies))

    def test_the_walk_reaches_every_handler(self):
        reached = {route.handler for route in routes.all_routes()}
        self.assertEqual(set(), {h.__qualname__ for h in routes.handlers()
                                 - reached})
