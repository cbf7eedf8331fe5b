"""PCI addresses: parsing, formatting and the JSON shape cyborg stores.

An address is ``DDDD:BB:DD.F`` (domain, bus, device, function). Upstream
stores it as sorted-key JSON with every part a string and the function
without padding: ``{"bus": "3b", "device": "00", "domain": "0000",
"function": "1"}``; the conductor compares those strings, so the shape is a
contract.
"""

import collections
import json
import re

_ADDRESS_RE = re.compile(
    r'^(?:(?P<domain>[0-9a-fA-F]{1,4}):)?(?P<bus>[0-9a-fA-F]{1,2}):'
    r'(?P<device>[0-9a-fA-F]{1,2})\.(?P<function>[0-7])$')


class PciAddress(collections.namedtuple(
        'PciAddress', ['domain', 'bus', 'device', 'function'])):
    """A PCI address, each part an int."""

    __slots__ = ()

    @classmethod
    def parse(cls, text):
        """Parse ``DDDD:BB:DD.F`` (the domain may be left out).

        :raises ValueError: if ``text`` is not a PCI address.
        """
        match = _ADDRESS_RE.match(text.strip()) if text else None
        if match is None:
            raise ValueError('%r is not a PCI address' % (text,))
        return cls(int(match.group('domain') or '0', 16),
                   int(match.group('bus'), 16),
                   int(match.group('device'), 16),
                   int(match.group('function'), 16))

    def __str__(self):
        return '%04x:%02x:%02x.%x' % self

    def as_dict(self):
        """The address as upstream's dict of strings."""
        return {'domain': '%04x' % self.domain, 'bus': '%02x' % self.bus,
                'device': '%02x' % self.device,
                'function': '%x' % self.function}

    def to_json(self, **extra):
        """Sorted-key JSON of :meth:`as_dict`, with ``extra`` keys added."""
        return json.dumps(dict(self.as_dict(), **extra), sort_keys=True)


def parse_or_none(text):
    """:meth:`PciAddress.parse`, or None for anything else."""
    try:
        return PciAddress.parse(text)
    except (ValueError, TypeError):
        return None
