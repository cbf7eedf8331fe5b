"""cyborg.compat.amqp on py-amqp's own transport, connected to a socket:
frames come whole through py-amqp's frame reader, read in chunks."""

import socket
import struct

import testtools

from cyborg.compat import amqp as amqp_compat


def frame(kind, payload):
    return struct.pack('>BHI', kind, 1, len(payload)) + payload + b'\xce'


class BufferedTransportTest(testtools.TestCase):

    def test_frames_through_py_amqps_reader(self):
        listener = socket.create_server(('127.0.0.1', 0))
        self.addCleanup(listener.close)
        port = listener.getsockname()[1]
        transport = amqp_compat.BufferedTCPTransport(
            '127.0.0.1:%d' % port, connect_timeout=5, read_timeout=5)
        transport.connect()
        self.addCleanup(transport.close)
        peer, _ = listener.accept()
        self.addCleanup(peer.close)
        recvs = []
        recv = transport._quick_recv
        transport._quick_recv = lambda size: recvs.append(size) or recv(size)
        peer.sendall(frame(1, b'first') + frame(3, b'x' * 100))
        self.assertEqual((1, 1, b'first'), transport.read_frame()[:3])
        self.assertEqual((3, 1, b'x' * 100), transport.read_frame()[:3])
        # Chunks (py-amqp alone: three recv() per frame, six here).
        self.assertLess(len(recvs), 6)
        self.assertGreaterEqual(min(recvs), amqp_compat.BufferedTCPTransport
                                .CHUNK)
        self.assertEqual(0, transport.buffered())
