"""A test whose server does not answer is skipped, with the reason, unless
CYBORG_TEST_REQUIRE_SERVICES makes that a failure."""

import unittest

import fixtures
import testtools

from cyborg.tests import services


class _Probe(testtools.TestCase):
    # Run by the tests below, not collected on its own.
    __test__ = False

    def test_needs_a_server(self):
        services.unavailable(self, 'rabbit at 127.0.0.1:1 is not reachable')


class UnavailableTest(testtools.TestCase):

    def run_probe(self, required):
        self.useFixture(fixtures.EnvironmentVariable(
            services.REQUIRE_ENV, '1' if required else None))
        result = unittest.TestResult()
        _Probe('test_needs_a_server').run(result)
        return result

    def test_skipped_with_the_reason(self):
        result = self.run_probe(required=False)
        self.assertEqual([], result.errors)
        [(_test, reason)] = result.skipped
        self.assertIn('rabbit at 127.0.0.1:1 is not reachable', reason)
        self.assertIn(services.REQUIRE_ENV, reason)

    def test_a_failure_when_servers_are_required(self):
        result = self.run_probe(required=True)
        self.assertEqual([], result.errors)
        self.assertEqual(1, len(result.failures))
