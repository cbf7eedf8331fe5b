"""``cyborg.api.fastcheck`` answers what jsonschema answers.

Every schema of ``cyborg.api.schemas`` compiles (so every request body
and query is checked by it first), and for thousands of documents made
from each schema, near its bounds and beside them, the compiled check
and ``validation.Validator`` agree on valid or not. Keywords it does not
compile leave the schema to jsonschema."""

import importlib
import pkgutil
import random
import uuid

import jsonschema

from cyborg.api import fastcheck
import cyborg.api.schemas
from cyborg.api import validation
from cyborg.common import exception
from cyborg.tests import base

DOCS_PER_SCHEMA = 1000
SEED = 20261128


def api_schemas():
    """{'module.NAME': schema} of every schema constant of the API."""
    found = {}
    for module_info in pkgutil.iter_modules(cyborg.api.schemas.__path__):
        module = importlib.import_module('cyborg.api.schemas.%s'
                                         % module_info.name)
        for name, value in vars(module).items():
            if (name.isupper() and isinstance(value, dict)
                    and ('type' in value or 'properties' in value)):
                found['%s.%s' % (module_info.name, name)] = value
    return found


_ODD = [None, True, False, 0, 1, -1, 1.0, 1.5, 2 ** 31, -2 ** 31 - 1, '',
        'x', ' ', '0', '12', 'add', 'remove', '\u00e9\u00e9', [], [1], {},
        {'a': 1}, str(uuid.UUID(int=7)), 'not-a-uuid' * 3]


def _properties(schema):
    """Every property a schema or its parts (allOf, anyOf, if/then)
    name, with the schemas they are given."""
    found = {}
    if not isinstance(schema, dict):
        return found
    for name, sub in schema.get('properties', {}).items():
        found.setdefault(name, []).append(sub)
    for key in ('allOf', 'anyOf'):
        for sub in schema.get(key, ()):
            for name, subs in _properties(sub).items():
                found.setdefault(name, []).extend(subs)
    for key in ('if', 'then', 'else'):
        for name, subs in _properties(schema.get(key)).items():
            found.setdefault(name, []).extend(subs)
    return found


def _kind(schema, rng):
    kind = schema.get('type')
    if isinstance(kind, list):
        return rng.choice(kind)
    if kind:
        return kind
    if 'enum' in schema or 'const' in schema:
        return 'string'
    if _properties(schema) or 'propertyNames' in schema:
        return 'object'
    if 'anyOf' in schema:
        return _kind(rng.choice(schema['anyOf']), rng)
    return None


def _length(schema, rng, low_key, high_key, cap):
    low = schema.get(low_key, 0)
    high = schema.get(high_key, cap)
    return max(0, rng.choice([low - 1, low, low + 1, high - 1, high,
                              high + 1, rng.randint(0, min(high, cap))]))


def _string(schema, rng):
    if 'enum' in schema and rng.random() < 0.8:
        return rng.choice(schema['enum'])
    if 'const' in schema and rng.random() < 0.8:
        return schema['const']
    if schema.get('format') == 'uuid' and rng.random() < 0.7:
        value = str(uuid.UUID(int=rng.getrandbits(128)))
        return value.upper() if rng.random() < 0.1 else value
    if 'pattern' in schema and rng.random() < 0.5:
        return str(rng.choice([rng.randint(0, 10 ** 6), 0, '01', 'a1']))
    length = _length(schema, rng, 'minLength', 'maxLength', 300)
    if length > 300 and rng.random() < 0.9:
        length = rng.randint(0, 300)
    alphabet = 'abcXYZ09-_.:/ \u00e9\u4e2d'
    return ''.join(rng.choice(alphabet) for _ in range(length))


def _number(schema, rng, integer):
    points = [schema.get(key) for key in ('minimum', 'maximum',
                                          'exclusiveMinimum',
                                          'exclusiveMaximum')]
    points = [p for p in points if p is not None] or [0]
    point = rng.choice(points) + rng.choice([-1, 0, 1])
    if not integer and rng.random() < 0.3:
        return point + rng.choice([0.5, -0.5, 1e-9])
    return point


def _object(schema, rng, depth):
    doc = {}
    required = set(schema.get('required', ()))
    for name, subs in _properties(schema).items():
        if rng.random() < (0.95 if name in required else 0.6):
            doc[name] = generate(rng.choice(subs), rng, depth + 1)
    names = schema.get('propertyNames')
    if names is not None:
        for _ in range(_length(schema, rng, 'minProperties',
                               'maxProperties', 4) % 5):
            extra = schema.get('additionalProperties', True)
            # JSON names are strings.
            doc[str(generate(names, rng, depth + 1))] = generate(
                extra if isinstance(extra, dict) else {}, rng, depth + 1)
    if rng.random() < 0.15:
        extra = schema.get('additionalProperties', True)
        doc['extra_%d' % rng.randint(0, 3)] = generate(
            extra if isinstance(extra, dict) else {}, rng, depth + 1)
    if rng.random() < 0.05:
        doc = {}
    return doc


def generate(schema, rng, depth=0):
    """A document made from ``schema``: mostly of the right shape, with
    values at and beside its bounds, and sometimes anything at all."""
    if not isinstance(schema, dict) or depth > 6 or rng.random() < 0.08:
        return rng.choice(_ODD)
    kind = _kind(schema, rng)
    if kind == 'object':
        return _object(schema, rng, depth)
    if kind == 'array':
        length = _length(schema, rng, 'minItems', 'maxItems', 6)
        length = min(length, 6) if rng.random() < 0.95 else length
        return [generate(schema.get('items', {}), rng, depth + 1)
                for _ in range(min(length, 1100))]
    if kind == 'string':
        return _string(schema, rng)
    if kind in ('integer', 'number'):
        return _number(schema, rng, kind == 'integer')
    if kind == 'boolean':
        return rng.random() < 0.5
    return rng.choice(_ODD)


class FastCheckTest(base.TestCase):

    def test_every_api_schema_compiles(self):
        schemas = api_schemas()
        self.assertGreater(len(schemas), 20)
        for name, schema in schemas.items():
            self.assertIsNotNone(
                fastcheck.build_or_none(schema, validation._FORMATS), name)

    def test_it_agrees_with_jsonschema_on_every_api_schema(self):
        rng = random.Random(SEED)
        for name, schema in sorted(api_schemas().items()):
            check = fastcheck.build(schema, validation._FORMATS)
            validator = validation.Validator(
                schema, format_checker=validation._FORMATS)
            valid = 0
            for _ in range(DOCS_PER_SCHEMA):
                doc = generate(schema, rng)
                expected = validator.is_valid(doc)
                self.assertEqual(expected, check(doc), '%s: %r' % (
                    name, doc))
                valid += expected
            # Both answers were tried for each schema.
            self.assertGreater(valid, 0, name)
            self.assertLess(valid, DOCS_PER_SCHEMA, name)

    def test_keywords_it_does_not_compile(self):
        for schema in ({'type': 'object', 'patternProperties': {}},
                       {'oneOf': [{'type': 'string'}]},
                       {'enum': [True, 'a']}, {'const': None},
                       {'type': 'thing'}, {'$ref': '#/x'},
                       {'items': [{'type': 'string'}]},
                       {'properties': {'a': {'not': {}}}}):
            self.assertIsNone(fastcheck.build_or_none(schema), schema)

    def test_a_valid_body_is_not_walked_by_jsonschema(self):
        schema = {'type': 'object', 'properties': {'a': {'type': 'string'}}}
        walked = []
        original = jsonschema.exceptions.best_match
        self.patch(jsonschema.exceptions, 'best_match',
                   lambda errors: walked.append(1) or original(errors))
        self.assertEqual({'a': 'x'}, validation.validate(schema, {'a': 'x'}))
        self.assertEqual([], walked)
        # An invalid one is, for jsonschema's message.
        self.assertRaises(exception.InvalidRequestBody, validation.validate,
                          schema, {'a': 1})
        self.assertEqual([1], walked)
