"""Whether a document is valid against one of the API's JSON schemas, as
a plain function compiled from the schema once.

jsonschema walks the schema for every document, which cost about 6 % of
the API's CPU on Nova's boot path (the bind's JSON patch and the query
strings), where nearly every document is valid. :func:`build` turns a
schema made only of the keywords below into a function that answers
exactly what jsonschema answers, valid or not; ``cyborg.api.validation``
asks it first and leaves to jsonschema only the documents it finds
invalid, for jsonschema's message. A schema with any other keyword
compiles to None, and jsonschema checks every document against it.
``test_fastcheck`` checks that both agree on generated documents for
every schema of ``cyborg.api.schemas``.

Supported: boolean schemas, ``type`` (one or a list, an integer being
an int that is not a bool, as ``validation.Validator`` types it),
``enum`` and ``const`` of strings and numbers, ``properties``, ``required``,
``additionalProperties``, ``minProperties``, ``maxProperties``,
``propertyNames``, ``items`` (one schema), ``minItems``, ``maxItems``,
``minLength``, ``maxLength``, ``pattern``, ``format`` (by the format
checker given), ``minimum``, ``maximum``, ``exclusiveMinimum``,
``exclusiveMaximum``, ``allOf``, ``anyOf``, ``if``/``then``/``else`` and
``maxJsonBytes``; annotations (``description``, ``title``, ``$comment``,
``examples``, ``default``, and cyborg's ``separator``) are ignored, as
jsonschema ignores them.
"""

import re

from oslo_serialization import jsonutils

_ANNOTATIONS = frozenset(('description', 'title', '$comment', 'examples',
                          'default', 'separator', 'then', 'else'))


class Unsupported(Exception):
    """The schema has a keyword (or a form of one) not compiled here."""


def _is_integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPES = {
    'string': lambda value: isinstance(value, str),
    'integer': _is_integer,
    'number': _is_number,
    'object': lambda value: isinstance(value, dict),
    'array': lambda value: isinstance(value, list),
    'boolean': lambda value: isinstance(value, bool),
    'null': lambda value: value is None,
}


def _type(kinds):
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    try:
        tests = [_TYPES[kind] for kind in kinds]
    except (KeyError, TypeError):
        raise Unsupported('type %r' % (kinds,)) from None
    return lambda value: any(test(value) for test in tests)


def _members(members, keyword):
    """A test of being one of ``members`` (strings and numbers), as
    jsonschema's equality says: a string equals only that string, a
    number the same number (1 and 1.0 alike), and a bool no number."""
    if not all(isinstance(member, str) or _is_number(member)
               for member in members):
        raise Unsupported('%s of values other than strings and numbers'
                          % keyword)
    strings = frozenset(m for m in members if isinstance(m, str))
    numbers = frozenset(m for m in members if not isinstance(m, str))

    def test(value):
        if isinstance(value, str):
            return value in strings
        return _is_number(value) and value in numbers
    return test


def _property_checks(schema, format_checker):
    """The checks of ``properties``, ``required`` and
    ``additionalProperties``."""
    checks = []
    properties = {name: build(sub, format_checker)
                  for name, sub in schema.get('properties', {}).items()}
    if properties:
        def check_properties(value):
            for name, check in properties.items():
                if name in value and not check(value[name]):
                    return False
            return True
        checks.append(check_properties)
    required = tuple(schema.get('required', ()))
    if required:
        checks.append(lambda value: all(name in value for name in required))
    if 'additionalProperties' in schema:
        extra = build(schema['additionalProperties'], format_checker)

        def check_extra(value):
            return all(extra(item) for name, item in value.items()
                       if name not in properties)
        checks.append(check_extra)
    return checks


def _length_checks(schema, least_key, most_key):
    """The checks of a pair of bounds on a value's length (minLength and
    maxLength, minItems and maxItems, minProperties and maxProperties)."""
    checks = []
    if least_key in schema:
        least = schema[least_key]
        checks.append(lambda value: len(value) >= least)
    if most_key in schema:
        most = schema[most_key]
        checks.append(lambda value: len(value) <= most)
    return checks


def _object_checks(schema, format_checker):
    """The checks of the keywords that apply to objects."""
    checks = _property_checks(schema, format_checker)
    checks += _length_checks(schema, 'minProperties', 'maxProperties')
    if 'propertyNames' in schema:
        name_check = build(schema['propertyNames'], format_checker)
        checks.append(lambda value: all(name_check(name) for name in value))
    return checks


def _array_checks(schema, format_checker):
    checks = []
    if 'items' in schema:
        if not isinstance(schema['items'], (dict, bool)):
            raise Unsupported('items as a list')
        item = build(schema['items'], format_checker)
        checks.append(lambda value: all(item(each) for each in value))
    return checks + _length_checks(schema, 'minItems', 'maxItems')


def _string_checks(schema):
    checks = _length_checks(schema, 'minLength', 'maxLength')
    if 'pattern' in schema:
        search = re.compile(schema['pattern']).search
        checks.append(lambda value: search(value) is not None)
    return checks


def _number_checks(schema):
    checks = []
    if 'minimum' in schema:
        least = schema['minimum']
        checks.append(lambda value: value >= least)
    if 'maximum' in schema:
        most = schema['maximum']
        checks.append(lambda value: value <= most)
    if 'exclusiveMinimum' in schema:
        above = schema['exclusiveMinimum']
        checks.append(lambda value: value > above)
    if 'exclusiveMaximum' in schema:
        below = schema['exclusiveMaximum']
        checks.append(lambda value: value < below)
    return checks


_OBJECT_KEYS = frozenset(('properties', 'required', 'additionalProperties',
                          'minProperties', 'maxProperties', 'propertyNames'))
_ARRAY_KEYS = frozenset(('items', 'minItems', 'maxItems'))
_STRING_KEYS = frozenset(('minLength', 'maxLength', 'pattern'))
_NUMBER_KEYS = frozenset(('minimum', 'maximum', 'exclusiveMinimum',
                          'exclusiveMaximum'))
_ANY_KEYS = frozenset(('type', 'enum', 'const', 'format', 'allOf', 'anyOf',
                       'if', 'maxJsonBytes'))
_KNOWN = (_OBJECT_KEYS | _ARRAY_KEYS | _STRING_KEYS | _NUMBER_KEYS
          | _ANY_KEYS | _ANNOTATIONS)


def _all_of(checks):
    if not checks:
        return lambda value: True
    if len(checks) == 1:
        return checks[0]
    return lambda value: all(check(value) for check in checks)


def _when(applies, checks):
    """``checks`` for values ``applies`` says they concern; others pass."""
    every = _all_of(checks)
    return lambda value: not applies(value) or every(value)


def _format(name, format_checker):
    if format_checker is None:
        return None
    return lambda value: format_checker.conforms(value, name)


def _size(limit):
    return lambda value: len(jsonutils.dump_as_bytes(value)) <= limit


def _value_checks(schema, format_checker):
    """The checks of the keywords that apply to any value."""
    checks = []
    if 'type' in schema:
        checks.append(_type(schema['type']))
    if 'enum' in schema:
        checks.append(_members(schema['enum'], 'enum'))
    if 'const' in schema:
        checks.append(_members([schema['const']], 'const'))
    if 'format' in schema:
        check = _format(schema['format'], format_checker)
        if check is not None:
            checks.append(check)
    if 'maxJsonBytes' in schema:
        checks.append(_size(schema['maxJsonBytes']))
    return checks


def _combined_checks(schema, format_checker):
    """The checks of ``allOf``, ``anyOf`` and ``if``."""
    checks = [build(sub, format_checker) for sub in schema.get('allOf', ())]
    if 'anyOf' in schema:
        options = [build(sub, format_checker) for sub in schema['anyOf']]
        checks.append(lambda value: any(option(value)
                                        for option in options))
    if 'if' in schema:
        condition = build(schema['if'], format_checker)
        then = build(schema.get('then', True), format_checker)
        otherwise = build(schema.get('else', True), format_checker)
        checks.append(lambda value: then(value) if condition(value)
                      else otherwise(value))
    return checks


#: (the keywords, whether a value is concerned by them, their checks).
_BY_KIND = (
    (_OBJECT_KEYS, _TYPES['object'], _object_checks),
    (_ARRAY_KEYS, _TYPES['array'], _array_checks),
    (_STRING_KEYS, _TYPES['string'],
     lambda schema, _format_checker: _string_checks(schema)),
    (_NUMBER_KEYS, _is_number,
     lambda schema, _format_checker: _number_checks(schema)),
)


def build(schema, format_checker=None):
    """The function of one document that says whether it is valid
    against ``schema`` (``format`` checked by ``format_checker``, as the
    validator would); raises Unsupported when the schema has a keyword
    or form this module does not compile."""
    if schema is True or schema is False:
        return lambda value, valid=schema: valid
    if not isinstance(schema, dict):
        raise Unsupported('a schema that is not an object')
    unknown = set(schema) - _KNOWN
    if unknown:
        raise Unsupported(', '.join(sorted(unknown)))
    checks = _value_checks(schema, format_checker)
    for keys, concerned, kind_checks in _BY_KIND:
        if keys & set(schema):
            checks.append(_when(concerned,
                                kind_checks(schema, format_checker)))
    checks.extend(_combined_checks(schema, format_checker))
    return _all_of(checks)


def build_or_none(schema, format_checker=None):
    """:func:`build`, or None for a schema it does not compile."""
    try:
        return build(schema, format_checker)
    except Unsupported:
        return None
