"""Property-based fuzzing of every route (hypothesis): whatever the path,
query, body, identity and microversion, the API answers below 500, and a
request it refuses (4xx) writes nothing to the database.

Bodies are drawn from three kinds: a route's valid body with one value
anywhere inside it replaced by arbitrary JSON (so that the request gets
past the outer checks), arbitrary JSON, and raw bytes that are not JSON
or are pathological JSON. Strings include lone surrogates, NULs and
control characters; integers go far beyond 64 bits.

Reproducible in CI: hypothesis runs derandomized (the examples are a
function of the test), without an example database, and a bounded
number of examples per test (``CYBORG_FUZZ_EXAMPLES`` per route group,
default ``EXAMPLES``). A failure prints the request that failed.
"""

import json
import os
from urllib import parse

import hypothesis
from hypothesis import strategies as st
import testtools

from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import hostile
from cyborg.tests.functional.api import routes
from cyborg.tests.functional.api import test_hostile_input as sweep

EXAMPLES = int(os.environ.get('CYBORG_FUZZ_EXAMPLES', '150'))
SETTINGS = hypothesis.settings(
    max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
    print_blob=False, suppress_health_check=list(hypothesis.HealthCheck))

NOVA = dict(base.MEMBER, **{'X-Service-Roles': 'service'})
ADMIN_NOVA = dict(base.ADMIN, **{'X-Service-Roles': 'service'})
IDENTITIES = [ADMIN_NOVA, base.ADMIN, NOVA, base.MEMBER, base.READER,
              base.OTHER, {}]
VERSIONS = [None, '2.0', '2.1', '2.2', '2.3', '2.4', '2.5', 'latest',
            '2.99', 'junk']

# Any character, lone surrogates and NUL included.
CHARACTERS = st.characters(exclude_categories=())
TEXT = st.one_of(st.text(CHARACTERS, max_size=20),
                 st.sampled_from([v for v in sweep.HOSTILE_VALUES
                                  if isinstance(v, str)]))
LEAF = st.one_of(st.none(), st.booleans(),
                 st.integers(min_value=-2 ** 80, max_value=2 ** 80),
                 st.floats(allow_nan=False, allow_infinity=False), TEXT)
JSON = st.recursive(
    LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                  st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12)


def _quote(value):
    return parse.quote(str(value), safe='', errors='surrogatepass')


@st.composite
def requests(draw, group, valid_bodies):
    """(method, path, body, query, headers, version) of one request to
    a route of ``group``."""
    route = draw(st.sampled_from(group))
    ident = draw(st.one_of(st.none(), st.sampled_from(sweep.PATH_VALUES),
                           TEXT.map(_quote)))
    valid = valid_bodies.get(sweep.body_key(route))
    kinds = [st.sampled_from(sweep.RAW_BODIES), JSON]
    if valid is not None:
        paths = list(sweep.leaf_paths(valid))
        kinds.insert(0, st.builds(sweep.replaced, st.just(valid),
                                  st.sampled_from(paths), JSON))
        kinds.insert(0, st.just(valid))
    body = draw(st.one_of(kinds))
    names = st.sampled_from(sweep.QUERY_NAMES + ['self', 'unknown'])
    values = st.one_of(TEXT, st.integers(min_value=-2 ** 80,
                                         max_value=2 ** 80))
    query = draw(st.lists(st.tuples(names, values), max_size=3))
    return (route, ident, body,
            '&'.join('%s=%s' % (n, _quote(v)) for n, v in query),
            draw(st.sampled_from(IDENTITIES)),
            draw(st.sampled_from(VERSIONS)))


def _group(prefixes):
    return [route for route in routes.all_routes()
            if route.path.startswith(prefixes)]


class FuzzTest(hostile.World):

    def fuzz(self, prefixes):
        group = _group(prefixes)
        self.assertTrue(group, prefixes)
        valid = sweep.valid_bodies(self.ids)

        @SETTINGS
        @hypothesis.given(requests(group, valid))
        def check(request):
            route, ident, body, query, headers, version = request
            path = self.path_of(route, ident)
            response, writes = self.send(route.method, path, body=body,
                                         query=query, headers=headers,
                                         version=version)
            what = '%s %s?%s %s as %s at %s' % (
                route.method, path[:200], query[:200],
                json.dumps(body)[:300] if not isinstance(body, bytes)
                else body[:100], headers.get('X-User-Id'), version)
            self.assert_no_5xx_and_no_write_when_rejected(what, response,
                                                          writes)
        check()

    def test_v1(self):
        self.fuzz(('/v1',))

    def test_device_profiles_and_arqs(self):
        self.fuzz(('/v2/device_profiles', '/v2/accelerator_requests'))

    def test_inventory(self):
        self.fuzz(('/v2/deployables', '/v2/devices', '/v2/attributes',
                   '/v2/hardware'))

    def test_generic_driver_operations(self):
        self.fuzz(('/v2/hosts', '/v2/drivers', '/v2/services',
                   '/v2/discovery', '/v2/attachments'))



class FuzzCoverageTest(testtools.TestCase):

    def test_every_route_is_fuzzed(self):
        groups = (('/v1',), ('/v2/device_profiles',
                             '/v2/accelerator_requests'),
                  ('/v2/deployables', '/v2/devices', '/v2/attributes',
                   '/v2/hardware'),
                  ('/v2/hosts', '/v2/drivers', '/v2/services',
                   '/v2/discovery', '/v2/attachments'))
        fuzzed = {r for prefixes in groups for r in _group(prefixes)}
        documents = {'/', '/v1', '/v2'}
        self.assertEqual([], [r for r in routes.all_routes()
                              if r not in fuzzed
                              and r.path not in documents])
