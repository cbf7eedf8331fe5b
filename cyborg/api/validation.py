"""The one place where request bodies and query strings become data.

Every route reads its body with ``body(request, schema)`` and its query
parameters with ``query(request, schema)``, after its policy check (as
upstream, whose policy decorator runs before WSME reads the body). The
schemas are data, one module per resource in ``cyborg.api.schemas``.

A body is parsed here and nowhere else (``Request`` keeps pecan from
reading it too). Before any schema sees it, a document is refused with
a 400 when it is not UTF-8 JSON, nests deeper than ``MAX_DEPTH``, holds
a number JSON cannot express (NaN, Infinity, overflowing floats) or a
string no database can store (a lone UTF-16 surrogate, a NUL). The
schema then bounds every string, list, object and integer as the
database column behind it would.

Query values arrive as strings; properties a schema types ``integer``
are converted first; a parameter the schema types ``array`` is a list
of the comma-separated items of its value when the schema names a
``separator`` (``?arqs=u1,u2``), else of every value given
(``?a=1&a=2``); any other takes the last value given.
"""

import json
import re
from urllib import parse as urlparse

import jsonschema
from jsonschema import validators
from oslo_serialization import jsonutils
from oslo_utils import uuidutils
import pecan
import webob.multidict

from cyborg.api import fastcheck
from cyborg.common import exception
from cyborg.i18n import _

MAX_DEPTH = 16
MESSAGE_MAX = 240
_CONTROL = re.compile('[\x00-\x1f\x7f]')
_INTEGER = re.compile(r'^\s*[-+]?\d{1,40}\s*$')
_FORMATS = jsonschema.FormatChecker(formats=())


class Request(pecan.Request):
    """pecan's request without pecan's reading of the body: pecan would
    otherwise decode a JSON (or form) body itself, unbounded, to pass its
    fields as handler arguments. Handler arguments come from the query
    string only; bodies are read by ``body()``."""

    @property
    def json(self):
        raise ValueError('bodies are read by cyborg.api.validation')

    json_body = json

    @property
    def POST(self):  # noqa: N802 - webob's name
        return webob.multidict.NoVars('bodies are read by '
                                      'cyborg.api.validation')


@_FORMATS.checks('uuid')
def _is_uuid(value):
    return not isinstance(value, str) or uuidutils.is_uuid_like(value)


def _max_json_bytes(validator, limit, instance, schema):
    """``maxJsonBytes``: the document, serialised as it is stored in a
    text column, fits in ``limit`` bytes."""
    size = len(jsonutils.dump_as_bytes(instance))
    if size > limit:
        yield jsonschema.ValidationError(
            _('takes %(size)d bytes as JSON; at most %(limit)d fit')
            % {'size': size, 'limit': limit})


def _is_integer(_checker, instance):
    """JSON Schema counts 1.0 as an integer; an id or a count here is
    an integer only when written as one."""
    return isinstance(instance, int) and not isinstance(instance, bool)


Validator = validators.extend(
    jsonschema.Draft202012Validator, {'maxJsonBytes': _max_json_bytes},
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        'integer', _is_integer))


def _short(text):
    text = str(text)
    if len(text) <= MESSAGE_MAX:
        return text
    return text[:MESSAGE_MAX] + '...'


def _reject_constant(name):
    raise ValueError(_('%s is not a JSON number') % name)


def _finite_float(text):
    value = float(text)
    if value in (float('inf'), float('-inf')):
        raise ValueError(_('%s is too large a number') % _short(text))
    return value


def _check_string(value):
    if '\x00' in value:
        raise exception.InvalidRequestBody(
            reason=_('strings cannot contain NUL characters'))
    try:
        value.encode('utf-8')
    except UnicodeEncodeError as exc:
        raise exception.InvalidRequestBody(
            reason=_('strings cannot contain lone UTF-16 surrogates '
                     '(\\ud800-\\udfff)')) from exc


def check_document(doc):
    """Refuses what no schema should have to think about: nesting beyond
    ``MAX_DEPTH`` and strings (keys included) a database cannot store.
    Walks the document without recursion."""
    pending = [(doc, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, str):
            _check_string(value)
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise exception.InvalidRequestBody(
                reason=_('objects and lists nest deeper than %d levels')
                % MAX_DEPTH)
        if isinstance(value, dict):
            for key in value:
                _check_string(key)
            value = value.values()
        pending.extend((item, depth + 1) for item in value)
    return doc


def parse(raw):
    """The JSON document of a request body (bytes); ``{}`` when empty."""
    if not raw or not raw.strip():
        return {}
    try:
        doc = json.loads(raw.decode('utf-8'),
                         parse_constant=_reject_constant,
                         parse_float=_finite_float)
    except RecursionError as exc:
        raise exception.InvalidRequestBody(
            reason=_('objects and lists nest deeper than %d levels')
            % MAX_DEPTH) from exc
    except ValueError as exc:  # includes UnicodeDecodeError
        raise exception.InvalidRequestBody(
            reason=_('not UTF-8 JSON: %s') % _short(exc)) from exc
    return check_document(doc)


def _where(error):
    return '/'.join(str(step) for step in error.absolute_path)


_JSON_TYPES = ((bool, 'a boolean'), (int, 'an integer'),
               (float, 'a number'), (str, 'a string'), (list, 'a list'),
               (dict, 'an object'), (type(None), 'null'))
_WANTED = {'object': 'an object', 'array': 'a list', 'string': 'a string',
           'integer': 'an integer', 'number': 'a number',
           'boolean': 'a boolean', 'null': 'null'}


def _json_type(value):
    return next(name for kind, name in _JSON_TYPES
                if isinstance(value, kind))


def _expected(schema):
    kinds = schema.get('type')
    kinds = [kinds] if isinstance(kinds, str) else kinds
    text = _(' or ').join(_WANTED[k] for k in kinds)
    if schema.get('required'):
        text += _(' with %s') % ', '.join(schema['required'])
    return text


def _reason(error):
    """What is wrong, in words that do not repeat a long value."""
    kind, limit = error.validator, error.validator_value
    if kind == 'type':
        return _('expected %(wanted)s, not %(got)s') % {
            'wanted': _expected(error.schema),
            'got': _json_type(error.instance)}
    if kind == 'maxLength':
        return _('longer than %d characters') % limit
    if kind == 'minLength':
        return (_('must not be empty') if limit == 1 else
                _('shorter than %d characters') % limit)
    if kind == 'maxItems':
        return _('more than %d items') % limit
    if kind == 'minItems':
        return (_('must not be empty') if limit == 1 else
                _('fewer than %d items') % limit)
    if kind == 'maxProperties':
        return _('more than %d fields') % limit
    if kind == 'minProperties':
        return _('must not be empty')
    return _short(error.message)


#: Schemas whose Validator is kept (ours are fewer than a hundred).
MAX_CACHED_VALIDATORS = 512

# {id(schema): (schema, its Validator, its fastcheck function or None)}:
# a Validator is immutable, and building one (its reference registry
# included) cost more than validating a small body with it.
_VALIDATORS = {}


def _compiled(schema):
    """The Validator of ``schema`` and its ``fastcheck`` function (None
    for a schema fastcheck does not compile), built once per schema
    object (the schemas are module constants; the schema is kept with
    them so that its id is not reused)."""
    cached = _VALIDATORS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1:]
    cached = (schema, Validator(schema, format_checker=_FORMATS),
              fastcheck.build_or_none(schema, _FORMATS))
    if len(_VALIDATORS) < MAX_CACHED_VALIDATORS:
        _VALIDATORS[id(schema)] = cached
    return cached[1:]


def _validator(schema):
    """The Validator of ``schema``, built once (``_compiled``)."""
    return _compiled(schema)[0]


def _valid_at_once(schema, doc):
    """Whether ``fastcheck`` says ``doc`` is valid against ``schema``
    (False also when it cannot tell: jsonschema then decides)."""
    check = _compiled(schema)[1]
    return check is not None and check(doc)


def validate(schema, doc):
    """``doc`` checked against ``schema``; InvalidRequestBody (400)
    naming the first field at fault, followed by the schema's
    ``description`` when it has one (a hint at the expected shape)."""
    if _valid_at_once(schema, doc):
        return doc
    error = jsonschema.exceptions.best_match(
        _validator(schema).iter_errors(doc))
    if error is None:
        return doc
    where = _where(error)
    reason = _reason(error)
    if where:
        reason = '%s: %s' % (where, reason)
    if schema.get('description'):
        reason = '%s. %s' % (reason, schema['description'])
    raise exception.InvalidRequestBody(reason=reason)


class URLCheck:
    """WSGI middleware: ``check_url`` before anything reads the URL."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        check_url(environ)
        return self.app(environ, start_response)


def check_url(environ):
    """What every URL must be before it is routed: a UTF-8 path and query
    string without control characters (no resource has them in its name,
    and a NUL cannot even be sent to PostgreSQL)."""
    try:
        path = environ.get('PATH_INFO', '').encode('latin-1').decode(
            'utf-8')
        params = urlparse.parse_qsl(environ.get('QUERY_STRING', ''),
                                 keep_blank_values=True, encoding='utf-8',
                                 errors='strict')
    except UnicodeError as exc:
        raise exception.InvalidParameterValue(
            err=_('The URL is not UTF-8.')) from exc
    if _CONTROL.search(path):
        raise exception.InvalidParameterValue(
            err=_('The path contains control characters.'))
    for name, value in params:
        if _CONTROL.search(name) or '\x00' in value:
            raise exception.InvalidQueryParameter(
                name=_short(repr(name)),
                reason=_('it contains control characters'))


def body(request, schema):
    """The request's body, parsed and valid against ``schema``."""
    return validate(schema, parse(request.body))


def _query_value(values, prop):
    """The value of a query parameter given ``values`` (every string it
    was given), as ``prop`` types it."""
    kind = prop.get('type')
    separator = prop.get('separator')
    if kind == 'array' and separator:
        return [item.strip() for item in values[-1].split(separator)
                if item.strip()]
    if kind == 'array':
        item = prop.get('items', {})
        return [_query_value([v], item) for v in values]
    value = values[-1]
    if kind == 'integer' and _INTEGER.match(value):
        return int(value)
    return value


def _check_query(schema, doc):
    if _valid_at_once(schema, doc):
        return doc
    error = jsonschema.exceptions.best_match(
        _validator(schema).iter_errors(doc))
    if error is None:
        return doc
    if error.validator == 'required':
        missing = [n for n in error.validator_value if n not in doc]
        raise exception.InvalidQueryParameter(name=missing[0],
                                              reason=_('it is required'))
    raise exception.InvalidQueryParameter(name=error.absolute_path[0],
                                          reason=_reason(error))


def query(request, schema):
    """``{name: value}`` of the query parameters ``schema`` names (others
    are ignored, as upstream ignores them), converted and validated;
    InvalidQueryParameter (400) names the parameter at fault."""
    params = request.GET
    doc = {}
    for name, prop in schema.get('properties', {}).items():
        values = params.getall(name)
        if values:
            doc[name] = _query_value(values, prop)
    return _check_query(schema, doc)


def path_value(name, value, schema):
    """A path segment taken as the query parameter ``name`` of
    ``schema`` would be."""
    prop = schema['properties'][name]
    return _check_query(schema, {name: _query_value([value], prop)})[name]
