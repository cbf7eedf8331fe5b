"""API documents as the columns and rows cliff's formatters print.

Columns are named as the API names the fields, so ``-f json`` output has
the API's keys. Nested values (``acc_specs``, lists) stay structures for
the machine formats (json, yaml) and print as compact JSON in a table.
"""

import json

from cliff import columns


class JsonColumn(columns.FormattableColumn):
    """A dict or list: JSON in a table, the structure in json/yaml."""

    def human_readable(self):
        return json.dumps(self._value, sort_keys=True)


def _cell(item, field, formatters):
    value = item.get(field)
    if field in formatters:
        return formatters[field](value)
    if isinstance(value, (dict, list)):
        return JsonColumn(value)
    return value


def listing(items, fields, formatters=None):
    """``(fields, rows)`` for a Lister: one row per item."""
    formatters = formatters or {}
    return fields, [tuple(_cell(item, f, formatters) for f in fields)
                    for item in items]


def show(item, fields=None, formatters=None):
    """``(fields, values)`` for a ShowOne; by default every field but the
    links, in alphabetical order."""
    formatters = formatters or {}
    if fields is None:
        fields = sorted(k for k in item if k != 'links')
    return fields, tuple(_cell(item, f, formatters) for f in fields)
