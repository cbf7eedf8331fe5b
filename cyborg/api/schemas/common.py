"""Types the resource schemas share, bounded by the columns they end in.

``String(n)`` columns hold ``n`` characters (MySQL utf8mb4, PostgreSQL);
``Text`` columns hold 65,535 bytes on MySQL, which is 16,383 characters
when every character takes four bytes, so text fields are bounded to
that. Integer columns are 32-bit signed.
"""

INT_MAX = 2 ** 31 - 1
INT_MIN = -2 ** 31
TEXT_BYTES = 65535
TEXT_CHARS = TEXT_BYTES // 4
NAME_CHARS = 255
# Fields of an object that takes fields it ignores.
FIELDS_MAX = 16
# Items in one comma-separated query value.
LIST_MAX = 1000


def string(max_length=NAME_CHARS, min_length=1, **extra):
    return dict({'type': 'string', 'minLength': min_length,
                 'maxLength': max_length}, **extra)


def integer(minimum=INT_MIN, maximum=INT_MAX):
    return {'type': 'integer', 'minimum': minimum, 'maximum': maximum}


def strict_object(properties, required=(), **extra):
    """An object of exactly these properties."""
    return dict({'type': 'object', 'properties': properties,
                 'required': list(required),
                 'additionalProperties': False}, **extra)


NAME = string()
TEXT = string(TEXT_CHARS, min_length=0)
UUID = {'type': 'string', 'format': 'uuid'}
ID = integer(1)
HOSTNAME = string()


def comma_list(item):
    """A query value listing ``item``s, comma-separated; validation
    splits it (``separator``) and drops empty items."""
    return {'type': 'array', 'separator': ',', 'minItems': 1,
            'maxItems': LIST_MAX, 'items': item}


NAMES = comma_list(NAME)
UUIDS = comma_list(UUID)
