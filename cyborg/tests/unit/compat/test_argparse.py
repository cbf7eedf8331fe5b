"""cyborg.compat.argparse on the standard library's parser."""

import argparse

import testtools

from cyborg.compat import argparse as argparse_compat


class ArgparseTest(testtools.TestCase):

    def test_rename_keeps_the_destination(self):
        parser = argparse.ArgumentParser()
        parser.add_argument('--timeout', dest='http_timeout')
        argparse_compat.rename_option(parser, '--timeout', '--os-timeout')
        self.assertFalse(argparse_compat.has_option(parser, '--timeout'))
        self.assertTrue(argparse_compat.has_option(parser, '--os-timeout'))
        parser.add_argument('--timeout', dest='wait')
        args = parser.parse_args(['--os-timeout', '5', '--timeout', '7'])
        self.assertEqual(('5', '7'), (args.http_timeout, args.wait))

    def test_rename_of_a_missing_option(self):
        self.assertRaises(KeyError, argparse_compat.rename_option,
                          argparse.ArgumentParser(), '--nope', '--other')
