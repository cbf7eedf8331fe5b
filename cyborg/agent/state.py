"""The agent's state file: the last report the conductor accepted.

One JSON object (``[agent] state_file``)::

    {"format": 1, "host": "cmp-1", "report_hash": "<sha256>",
     "devices": [<DriverDevice primitives>], "unconfirmed": null,
     "report_seq": 1795000000000000, "hardware": [<HardwareFunction
     primitives>]}

``report_hash`` and ``devices`` are the last report the conductor accepted.
``unconfirmed`` is the hash of a report sent after it whose fate the agent
does not know (the conductor did not answer, or asked for it again later):
the conductor may hold either, so an agent that starts with such a file
sends a full report. ``report_seq`` is the sequence of the last report
sent (absent in files of older agents): the next one's is higher.
``hardware`` is what the drivers saw with that report, offered or not
(absent, or null, when the report carried none): the hash covers it.

The file is replaced atomically (a temporary file in the same directory,
flushed to disk, then renamed over the old one), so a crash while writing
leaves the previous state. A file that cannot be read, is not this format,
belongs to another host name, or whose devices do not hash to its
``report_hash`` is ignored with a warning: the agent starts fresh and the
conductor gets a full report.
"""

import dataclasses
import json
import os
import tempfile

from oslo_log import log as logging

from cyborg.objects import driver_device
from cyborg.objects import hardware as hardware_obj

LOG = logging.getLogger(__name__)

FORMAT = 1


class InvalidState(Exception):
    """The content of a state file is not a state we wrote."""


@dataclasses.dataclass(frozen=True)
class AgentState:
    """What the agent keeps across restarts."""

    host: str
    report_hash: str | None = None
    devices: tuple = ()
    unconfirmed: str | None = None
    report_seq: int | None = None
    hardware: tuple | None = None

    @property
    def trusted_hash(self):
        """The hash the conductor surely holds, None when unsure."""
        return None if self.unconfirmed else self.report_hash

    def to_json(self):
        return json.dumps({
            'format': FORMAT, 'host': self.host,
            'report_hash': self.report_hash,
            'devices': [d.obj_to_primitive() for d in self.devices],
            'unconfirmed': self.unconfirmed,
            'report_seq': self.report_seq,
            'hardware': None if self.hardware is None else [
                h.obj_to_primitive() for h in self.hardware]},
            sort_keys=True, indent=1)


def _string_or_none(data, key):
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidState('%s is %r, not a string' % (key, value))
    return value


def _int_or_none(data, key):
    value = data.get(key)
    if value is not None and (isinstance(value, bool)
                              or not isinstance(value, int)):
        raise InvalidState('%s is %r, not an integer' % (key, value))
    return value


def _objects(data, key, cls):
    """The ``cls`` objects of list ``key`` of ``data``."""
    primitives = data.get(key, [])
    if not isinstance(primitives, list):
        raise InvalidState('%s is not a list' % key)
    try:
        objects = tuple(cls.obj_from_primitive(p) for p in primitives)
    except Exception as e:
        raise InvalidState('%s cannot be read back (%s)' % (key, e)) from e
    if not all(isinstance(o, cls) for o in objects):
        raise InvalidState('%s holds something other than %s'
                           % (key, cls.obj_name()))
    return objects


def parse(text, digest):
    """An AgentState from the file's ``text``; ``digest`` hashes a device
    list and a hardware list (or None) as the agent does. Raises
    InvalidState."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise InvalidState('not JSON (%s)' % e) from e
    if not isinstance(data, dict) or data.get('format') != FORMAT:
        raise InvalidState('not a format %d agent state' % FORMAT)
    devices = _objects(data, 'devices', driver_device.DriverDevice)
    hardware = (None if data.get('hardware') is None else
                _objects(data, 'hardware', hardware_obj.HardwareFunction))
    state = AgentState(host=_string_or_none(data, 'host'),
                       report_hash=_string_or_none(data, 'report_hash'),
                       devices=devices,
                       unconfirmed=_string_or_none(data, 'unconfirmed'),
                       report_seq=_int_or_none(data, 'report_seq'),
                       hardware=hardware)
    if state.report_hash is not None and digest(
            list(devices), None if hardware is None else list(hardware)
    ) != state.report_hash:
        raise InvalidState('its devices do not match its report hash')
    return state


def load(path, host, digest):
    """The state saved for ``host`` at ``path``, None to start fresh."""
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except FileNotFoundError:
        LOG.info('No agent state file at %s yet; the conductor gets a '
                 'full report', path)
        return None
    except (OSError, UnicodeDecodeError) as e:
        LOG.warning('Cannot read the agent state file %s (%s); starting '
                    'fresh', path, e)
        return None
    try:
        state = parse(text, digest)
    except InvalidState as e:
        LOG.warning('Ignoring the agent state file %s: %s; starting fresh',
                    path, e)
        return None
    if state.host != host:
        LOG.warning('The agent state file %s belongs to host %s, not %s; '
                    'starting fresh', path, state.host, host)
        return None
    return state


def save(path, state):
    """Replace the file at ``path`` with ``state``; False (and a warning)
    when it cannot be written."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(
            dir=directory, prefix='.%s.' % os.path.basename(path),
            suffix='.tmp')
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            f.write(state.to_json())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
        _sync_directory(directory)
    except OSError as e:
        LOG.warning('Cannot write the agent state file %s (%s); a restart '
                    'will send a full report', path, e)
        return False
    finally:
        if tmp is not None:
            _remove_quietly(tmp)
    return True


def _sync_directory(directory):
    """Make the rename itself durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass
