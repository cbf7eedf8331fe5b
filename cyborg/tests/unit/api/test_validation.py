"""The one parser and validator of request input, and the rules every
schema of ``cyborg.api.schemas`` keeps (every value bounded)."""

import importlib
import pkgutil

import fixtures
import testtools
import webob

from cyborg.api import schemas
from cyborg.api.schemas import common
from cyborg.api import validation
from cyborg.common import exception

OBJECT = {'type': 'object', 'properties': {
    'n': common.integer(1, 10), 's': common.string(5), 'u': common.UUID,
    'l': {'type': 'array', 'maxItems': 2, 'items': common.string(3)}},
    'additionalProperties': False, 'required': ['n']}
UUID = '0f3c5a7e-9b1d-4f2a-8c6e-1a2b3c4d5e6f'


class ParseTest(testtools.TestCase):

    def refused(self, raw, text):
        error = self.assertRaises(exception.InvalidRequestBody,
                                  validation.parse, raw)
        self.assertEqual(400, error.code)
        self.assertIn(text, str(error))

    def test_json_documents(self):
        self.assertEqual({'a': [1, 2.5, None, True, 'é']}, validation.parse(
            '{"a": [1, 2.5, null, true, "é"]}'.encode()))
        self.assertEqual({}, validation.parse(b''))
        self.assertEqual({}, validation.parse(b' \n'))
        self.assertIsNone(validation.parse(b'null'))

    def test_not_json(self):
        for raw in (b'{', b'{"a": }', b'\xff\xfe', b'\xef\xbb\xbf{}',
                    b'9' * 5000):
            self.refused(raw, 'not UTF-8 JSON')

    def test_numbers_json_cannot_express(self):
        for raw in (b'NaN', b'[Infinity]', b'-Infinity', b'1e999',
                    b'[-1e400]'):
            self.refused(raw, 'number')

    def test_nesting(self):
        deepest = b'[' * validation.MAX_DEPTH + b']' * validation.MAX_DEPTH
        self.assertIsInstance(validation.parse(deepest), list)
        for raw in (b'[' * 17 + b']' * 17,
                    b'{"a":' * 17 + b'1' + b'}' * 17,
                    b'[' * 1000 + b']' * 1000, b'[' * 100000):
            self.refused(raw, 'nest deeper than 16 levels')

    def test_strings_a_database_cannot_store(self):
        for raw in (b'"\\ud800"', b'["a\\udfffb"]', b'{"\\ud800": 1}',
                    b'{"a": {"b": "\\u0000"}}', b'{"\\u0000": 1}'):
            self.refused(raw, 'strings cannot contain')
        self.assertEqual('\U0001f600', validation.parse(b'"\\ud83d\\ude00"'))


class ValidateTest(testtools.TestCase):

    def refused(self, doc, text, schema=OBJECT):
        error = self.assertRaises(exception.InvalidRequestBody,
                                  validation.validate, schema, doc)
        self.assertIn(text, str(error))
        return str(error)

    def test_valid(self):
        doc = {'n': 3, 's': 'abc', 'u': UUID, 'l': ['a']}
        self.assertIs(doc, validation.validate(OBJECT, doc))

    def test_messages_name_the_field_without_repeating_long_values(self):
        self.refused([], 'expected an object with n, not a list')
        self.refused({}, "'n' is a required property")
        self.refused({'n': 1, 'x': 1}, "'x' was unexpected")
        self.refused({'n': 'one'}, 'n: expected an integer, not a string')
        self.refused({'n': 11}, 'n: 11 is greater than the maximum of 10')
        message = self.refused({'n': 1, 's': 'x' * 100000},
                               's: longer than 5 characters')
        self.assertLess(len(message), 100)
        self.refused({'n': 1, 'u': 'nope'}, "u: 'nope' is not a 'uuid'")
        self.refused({'n': 1, 'l': ['a', 'b', 'c']}, 'l: more than 2 items')
        self.refused({'n': 1, 'l': ['abcd']}, 'l/0: longer than 3')

    def test_integers_are_integers(self):
        for value in (True, 1.0, 2 ** 64, -1):
            self.refused({'n': value}, 'n:')

    def test_description_is_the_hint(self):
        schema = dict(OBJECT, description='Send {"n": 1}.')
        self.refused({}, 'is a required property. Send {"n": 1}.', schema)

    def test_max_json_bytes(self):
        schema = {'type': 'array', 'maxJsonBytes': 10}
        self.assertEqual(['abcdef'], validation.validate(schema, ['abcdef']))
        self.refused(['abcdefg'], 'takes 11 bytes as JSON; at most 10',
                     schema)

    def test_a_schema_validator_is_built_once_per_schema(self):
        validator = validation._validator(OBJECT)
        self.assertIs(validator, validation._validator(OBJECT))
        # Another schema object gets a validator of its own, even where
        # both are kept.
        lenient = dict(OBJECT, required=[])
        self.assertIsNot(validator, validation._validator(lenient))
        for _ in range(2):
            self.assertEqual({}, validation.validate(lenient, {}))
            self.refused({}, "'n' is a required property")

    def test_validators_kept_are_bounded(self):
        self.useFixture(fixtures.MockPatchObject(
            validation, 'MAX_CACHED_VALIDATORS',
            len(validation._VALIDATORS)))
        schema = dict(OBJECT, required=['s'])
        first = validation._validator(schema)
        self.assertIsNot(first, validation._validator(schema))
        self.refused({'n': 1}, "'s' is a required property", schema)


def _request(query):
    return webob.Request.blank('/x?' + query)


class QueryTest(testtools.TestCase):

    SCHEMA = {'type': 'object', 'properties': {
        'id': common.integer(), 'names': common.NAMES,
        'many': {'type': 'array', 'items': common.string(3)},
        'u': common.UUID}}

    def refused(self, query, name, text, schema=SCHEMA):
        error = self.assertRaises(exception.InvalidQueryParameter,
                                  validation.query, _request(query), schema)
        self.assertIn('Invalid query parameter %s: %s' % (name, text),
                      str(error))

    def test_values_converted(self):
        self.assertEqual(
            {'id': -7, 'names': ['a', 'b'], 'many': ['x', 'y'], 'u': UUID},
            validation.query(_request(
                'id=-7&names=a,,+b,&many=x&many=y&u=%s&other=1' % UUID),
                self.SCHEMA))

    def test_refused(self):
        self.refused('id=' + '9' * 30, 'id', '9' * 30 + ' is greater than '
                     'the maximum of 2147483647')
        self.refused('id=1.5', 'id', 'expected an integer, not a string')
        self.refused('names=,,', 'names', 'must not be empty')
        self.refused('names=' + 'a,' * 1001, 'names', 'more than 1000 items')
        self.refused('many=abcd', 'many', 'longer than 3 characters')
        self.refused('u=nope', 'u', "'nope' is not a 'uuid'")
        required = dict(self.SCHEMA, required=['u'])
        self.refused('', 'u', 'it is required', required)

    def test_path_value(self):
        self.assertEqual(['a', 'b'], validation.path_value(
            'names', 'a,b', self.SCHEMA))


class URLTest(testtools.TestCase):

    def check(self, path, query=''):
        return validation.check_url({'PATH_INFO': path,
                                     'QUERY_STRING': query})

    def test_good(self):
        self.check('/v2/device_profiles/\xc3\xa9', 'name=%C3%A9&x=a%0Ab')

    def test_refused(self):
        for path, query, text in [
                ('/v2/hosts/\xff', '', 'not UTF-8'),
                ('/v2/hosts/\xed\xa0\x80', '', 'not UTF-8'),
                ('/v2/hosts', 'host=%FF', 'not UTF-8'),
                ('/v2/hosts/a\x00', '', 'control characters'),
                ('/v2/hosts/a\nb', '', 'control characters'),
                ('/v2/hosts', 'host=a%00', 'control characters'),
                ('/v2/hosts', 'a%0Ab=1', 'control characters')]:
            error = self.assertRaises(exception.Invalid, self.check, path,
                                      query)
            self.assertIn(text, str(error))


def _all_schemas():
    for info in pkgutil.iter_modules(schemas.__path__):
        module = importlib.import_module('%s.%s' % (schemas.__name__,
                                                    info.name))
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, dict) and (
                    'type' in value or 'if' in value):
                yield '%s.%s' % (info.name, name), value


def _subschemas(schema, where):
    yield where, schema
    for key in ('properties',):
        for name, sub in schema.get(key, {}).items():
            yield from _subschemas(sub, '%s.%s' % (where, name))
    for key in ('items', 'additionalProperties', 'propertyNames', 'then',
                'else'):
        if isinstance(schema.get(key), dict):
            yield from _subschemas(schema[key], '%s/%s' % (where, key))
    for key in ('anyOf', 'allOf', 'oneOf'):
        for index, sub in enumerate(schema.get(key, ())):
            yield from _subschemas(sub, '%s/%s%d' % (where, key, index))


class SchemaRulesTest(testtools.TestCase):
    """Every value a schema admits is bounded, so that no request can
    hold a string, list, object or integer larger than its column. (A
    query schema's object is bounded by its properties: ``query()``
    reads no others.)"""

    def test_every_value_is_bounded(self):
        unbounded = []
        for name, schema in _all_schemas():
            for where, sub in _subschemas(schema, name):
                kind = sub.get('type')
                if 'enum' in sub or 'const' in sub:
                    continue
                if kind == 'string' and 'maxLength' not in sub and (
                        sub.get('format') != 'uuid'):
                    unbounded.append(where)
                elif kind == 'array' and 'maxItems' not in sub:
                    unbounded.append(where)
                elif kind in ('integer', 'number') and not (
                        'maximum' in sub and ('minimum' in sub or
                                              'exclusiveMinimum' in sub)):
                    unbounded.append(where)
                elif kind == 'object' and 'QUERY' not in name and not (
                        'maxProperties' in sub or 'maxJsonBytes' in sub
                        or sub.get('additionalProperties') is False):
                    unbounded.append(where)
        self.assertEqual([], unbounded)

    def test_bodies_of_strict_objects_list_their_required_fields(self):
        for name, schema in _all_schemas():
            for where, sub in _subschemas(schema, name):
                if 'properties' not in sub:
                    continue
                missing = set(sub.get('required', ())) - set(
                    sub['properties'])
                self.assertEqual(set(), missing, where)
