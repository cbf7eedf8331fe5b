"""py-amqp: a TCP transport that reads the socket in chunks.

py-amqp reads each frame's header, payload and end byte with a recv() of
its own, nine system calls per message; the heartbeat channel's consumer
(``common/heartbeats.py``) reads through :class:`BufferedTCPTransport`
instead. It overrides ``TCPTransport._read`` and ``_setup_transport`` and
keeps py-amqp's ``_read_buffer`` convention (what is left unread after an
error, put back in front by py-amqp's frame reader on a timeout), reading
with ``_quick_recv``. py-amqp documents none of them.
"""

import errno

import amqp.transport

DISTRIBUTION = 'amqp'
PRIVATE_NAMES = ('_quick_recv', '_read', '_read_buffer', '_setup_transport')


class BufferedTCPTransport(amqp.transport.TCPTransport):
    """py-amqp's TCP transport, reading the socket in chunks: py-amqp
    reads each frame's header, payload and end byte with a recv() of its
    own, nine system calls per message. What is left unread after an
    error is kept from its start, as py-amqp's own frame reader expects
    (it puts a partly read frame back in front of it on a timeout)."""

    CHUNK = 65536

    def _setup_transport(self):
        super()._setup_transport()
        self._pos = 0

    def _read(self, n, initial=False, _errnos=(errno.EAGAIN, errno.EINTR)):
        buf, pos = self._read_buffer, self._pos
        try:
            while len(buf) - pos < n:
                try:
                    chunk = self._quick_recv(max(self.CHUNK, n))
                except OSError as exc:
                    if exc.errno in _errnos:
                        if initial and self.raise_on_initial_eintr:
                            raise TimeoutError() from None
                        continue
                    raise
                if not chunk:
                    raise OSError('Server unexpectedly closed connection')
                buf, pos = buf[pos:] + chunk, 0
        except BaseException:
            self._read_buffer, self._pos = buf[pos:], 0
            raise
        self._read_buffer, self._pos = buf, pos + n
        return buf[pos:pos + n]

    def buffered(self):
        """How many bytes were read from the socket and not taken."""
        return len(self._read_buffer) - self._pos
