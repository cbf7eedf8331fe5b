"""cyborg.compat.cheroot on cheroot's own connection reader: the bytes it
read and has not handed out can be taken, and bytes put back are what it
hands out next."""

import socket

from cheroot import makefile
import testtools

from cyborg.compat import cheroot as cheroot_compat


class UnreadTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.ours, theirs = socket.socketpair()
        self.addCleanup(self.ours.close)
        self.addCleanup(theirs.close)
        self.rfile = makefile.MakeFile(theirs, 'rb')

    def test_take_and_put_back(self):
        self.ours.sendall(b'GET / HTTP/1.1\r\n')
        self.assertEqual(b'G', self.rfile.read(1))
        self.assertTrue(self.rfile.has_data())
        self.assertEqual(b'ET / HTTP/1.1\r\n',
                         cheroot_compat.take_unread(self.rfile))
        self.assertFalse(self.rfile.has_data())
        cheroot_compat.put_unread(self.rfile, bytearray(b'ET / HTTP/1.1\r\n'))
        self.assertTrue(self.rfile.has_data())
        self.assertEqual(b'ET / HTTP/1.1\r\n', self.rfile.readline())

    def test_what_is_put_back_comes_before_the_socket(self):
        self.ours.sendall(b'world')
        cheroot_compat.put_unread(self.rfile, b'hello ')
        self.assertEqual(b'hello ', self.rfile.read(6))
        self.assertEqual(b'world', self.rfile.read(5))
        self.assertEqual(b'', cheroot_compat.take_unread(self.rfile))
