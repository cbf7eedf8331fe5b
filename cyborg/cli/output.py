"""API documents as the columns and rows cliff's formatters print.

Columns are named as the API names the fields, so ``-f json`` output has
the API's keys. Nested values (``acc_specs``, lists) stay structures for
the machine formats (json, yaml) and print as compact JSON in a table.
"""

import json

from cliff import columns
from cliff import lister


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


class Lister(lister.Lister):
    """A cliff Lister whose empty table is one line saying there is
    nothing (``nothing()``), not the blank line cliff prints; the machine
    formats (json, yaml, csv, value) stay as they are, and so does a
    table asked for with ``--print-empty``."""

    #: What is listed, for the default ``nothing()``: "No <NOUN>."
    NOUN = 'rows'

    def nothing(self, parsed_args):
        """The line an empty table prints."""
        return 'No %s.' % self.NOUN

    def produce_output(self, parsed_args, column_names, data):
        data = list(data)
        if (not data and parsed_args.formatter == 'table'
                and not parsed_args.print_empty):
            self.app.stdout.write(self.nothing(parsed_args) + '\n')
            return 0
        return super().produce_output(parsed_args, column_names, data)


def on_host(parsed_args):
    """`` on host H`` when ``--host H`` was given, else nothing."""
    host = getattr(parsed_args, 'host', None)
    return ' on host %s' % host if host else ''
