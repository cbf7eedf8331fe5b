"""The RPC keys: who holds which, where they live, and how they are made.

An identity is ``api``, ``conductor`` or ``host:<hostname>``. Each
compute host has a key of its own, held by that host and the conductors;
the API has one, held by the API and the conductors. The conductor signs
what it sends to a host with that host's key, so no host holds a key
that speaks to another host or for the API.

A key file holds one or more keys, one per line (64 hex digits; ``#``
starts a comment). A sender signs with every key of its file and a
receiver accepts a message one of whose signatures verifies with a key
of its own file, so a key rotates without downtime: add a second key to
both files (in any order), then drop the old one from both.

A key file is for its owner alone (mode 0600, as this module writes
them): one that its group or others may read or write is refused when
read (:class:`~cyborg.common.exception.RPCKeyInsecure`), as ssh refuses
such a private key, so that a key cannot be used from a file that others
could have read or replaced.
"""

import hashlib
import os
import re
import secrets
import stat
import threading

from cyborg.common import exception

API = 'api'
CONDUCTOR = 'conductor'
HOST_PREFIX = 'host:'

KEY_BYTES = 32
_HOSTNAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$')
_KEY_LINE = re.compile(r'^[0-9a-f]{%d}$' % (KEY_BYTES * 2))


def host_identity(hostname):
    """The identity of compute host ``hostname``."""
    if not isinstance(hostname, str) or not _HOSTNAME.match(hostname):
        raise exception.Invalid(reason='%r is not a valid host name'
                                % (hostname,))
    return HOST_PREFIX + hostname


def host_of(identity):
    """The host name of a host identity, None for ``api`` and
    ``conductor``."""
    if identity and identity.startswith(HOST_PREFIX):
        return identity[len(HOST_PREFIX):]
    return None


def file_name(identity):
    """The file of ``identity``'s key in a key directory."""
    host = host_of(identity)
    if host is not None:
        host_identity(host)
        return 'host.%s.key' % host
    if identity == API:
        return 'api.key'
    raise exception.Invalid(reason='%r has no key of its own' % identity)


def key_id(key):
    """A short name of ``key`` that reveals nothing of it."""
    return hashlib.sha256(b'cyborg-rpc-key-id' + key).hexdigest()[:16]


def new_key():
    return secrets.token_bytes(KEY_BYTES)


def parse(text, path):
    """The keys of a key file's ``text``."""
    keys = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        if not _KEY_LINE.match(line):
            raise exception.RPCKeyMissing(
                identity=path, reason='line %d is not %d hex digits'
                % (number, KEY_BYTES * 2))
        keys.append(bytes.fromhex(line))
    return keys


#: Mode bits a key file must not have: any for its group or others.
OPEN_MODE_BITS = 0o077


def check_mode(path, mode):
    """Refuse (RPCKeyInsecure) the key file ``path`` of mode ``mode``
    (``st_mode``) if its group or others may read or write it."""
    if mode & OPEN_MODE_BITS:
        raise exception.RPCKeyInsecure(path=path,
                                       mode='%04o' % stat.S_IMODE(mode))


def read(path):
    """The keys of the key file ``path``; RPCKeyInsecure when its mode
    lets others than its owner at it."""
    with open(path) as f:
        check_mode(path, os.fstat(f.fileno()).st_mode)
        return parse(f.read(), path)


def _write_tmp(path, keys):
    directory = os.path.dirname(path) or '.'
    os.makedirs(directory, mode=0o700, exist_ok=True)
    tmp = '%s.%s.tmp' % (path, secrets.token_hex(4))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, 'w') as f:
        f.write('# cyborg RPC key(s): each signs, each is accepted\n')
        for key in keys:
            f.write(key.hex() + '\n')
    return tmp


def write(path, keys):
    """Write ``keys`` to ``path`` (mode 0600), replacing it at once."""
    os.replace(_write_tmp(path, keys), path)


def create(key_dir, identity):
    """Create ``identity``'s key file in ``key_dir`` unless it exists;
    returns ``(path, created)``. Two processes creating it at once end
    with the same key."""
    path = os.path.join(key_dir, file_name(identity))
    if os.path.exists(path):
        return path, False
    tmp = _write_tmp(path, [new_key()])
    try:
        os.link(tmp, path)
    except FileExistsError:
        return path, False
    finally:
        os.unlink(tmp)
    return path, True


def rotate(key_dir, identity):
    """Add a new key to ``identity``'s file; both are used until
    :func:`retire`."""
    path = os.path.join(key_dir, file_name(identity))
    write(path, read(path) + [new_key()])
    return path


def retire(key_dir, identity):
    """Keep only the newest key of ``identity``'s file."""
    path = os.path.join(key_dir, file_name(identity))
    write(path, read(path)[-1:])
    return path


class KeyStore:
    """The keys a process holds: those of ``key_dir`` and, for its own
    host identity, ``key_file`` when given. A file is read again when it
    changes. ``create_missing`` (tests and the all-in-one only) makes a
    key that is asked for and missing."""

    def __init__(self, key_dir, key_file=None, own_host=None,
                 create_missing=False):
        self.key_dir = key_dir
        self.key_file = key_file
        self.own_host = own_host
        self.create_missing = create_missing
        self._cache = {}
        self._lock = threading.Lock()

    @classmethod
    def from_conf(cls, conf):
        return cls(conf.security.key_dir, conf.security.key_file, conf.host)

    def path(self, identity):
        if self.key_file and identity == HOST_PREFIX + (self.own_host or ''):
            return self.key_file
        return os.path.join(self.key_dir, file_name(identity))

    def keys(self, identity):
        """``identity``'s keys; RPCKeyMissing when there are none."""
        try:
            path = self.path(identity)
        except exception.Invalid as e:
            raise exception.RPCKeyMissing(identity=identity,
                                          reason=str(e)) from None
        with self._lock:
            if self.create_missing and not os.path.exists(path):
                create(os.path.dirname(path), identity)
            try:
                info = os.stat(path)
            except OSError as e:
                raise exception.RPCKeyMissing(
                    identity=identity, reason='%s: %s' % (path, e.strerror)
                ) from None
            # The mode too: a file opened to others is refused at once.
            mark = (info.st_mtime_ns, info.st_size, info.st_ino,
                    info.st_mode)
            cached = self._cache.get(path)
            if cached is None or cached[0] != mark:
                cached = self._cache[path] = (mark, read(path))
        if not cached[1]:
            raise exception.RPCKeyMissing(identity=identity,
                                          reason='%s holds no key' % path)
        return cached[1]
