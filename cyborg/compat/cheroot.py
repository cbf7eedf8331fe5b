"""cheroot: the bytes its connection reader holds.

``api/http_limits.py`` reads a request's head and body as they arrive
(with its own timeouts) before cheroot parses them from the connection's
reader, ``cheroot.makefile.BufferedReader`` (``rfile``). That reader keeps
what it read from the socket and has not handed out in ``_read_buf`` from
``_read_pos`` on; cheroot has no public way to take those bytes or put
bytes back.
"""

DISTRIBUTION = 'cheroot'
PRIVATE_NAMES = ('_read_buf', '_read_pos')


def take_unread(rfile):
    """The bytes ``rfile`` read from the socket and has not handed out,
    taken from it (it is left empty)."""
    unread = rfile._read_buf[rfile._read_pos:]
    rfile._read_buf, rfile._read_pos = b'', 0
    return unread


def put_unread(rfile, data):
    """Have ``rfile`` hand out ``data`` before what it reads next (it
    holds nothing unread: see :func:`take_unread`)."""
    rfile._read_buf, rfile._read_pos = bytes(data), 0
