"""The real servers tests run against, and what happens when one is absent.

Tests that need PostgreSQL, MariaDB or RabbitMQ call ``require(name)``. When
the server does not answer, the test is skipped with the reason, unless
``CYBORG_TEST_REQUIRE_SERVICES`` is set (CI sets it), in which case it fails.
Addresses come from environment variables with the local defaults.
"""

import functools
import os
import socket
import urllib.parse


REQUIRE_ENV = 'CYBORG_TEST_REQUIRE_SERVICES'

URLS = {
    'postgresql': os.environ.get(
        'CYBORG_TEST_POSTGRESQL_URL',
        'postgresql+psycopg2://postgres@127.0.0.1:5432/test'),
    'mysql': os.environ.get(
        'CYBORG_TEST_MYSQL_URL', 'mysql+pymysql://root@127.0.0.1:3306/test'),
    'rabbit': os.environ.get(
        'CYBORG_TEST_TRANSPORT_URL', 'rabbit://guest:guest@127.0.0.1:5672/'),
}


def services_required():
    return os.environ.get(REQUIRE_ENV, '').lower() not in ('', '0', 'false',
                                                           'no')


@functools.cache
def _reachable(name):
    parsed = urllib.parse.urlparse(URLS[name])
    try:
        with socket.create_connection((parsed.hostname, parsed.port),
                                      timeout=2):
            return None
    except OSError as e:
        return '%s at %s:%s is not reachable (%s)' % (
            name, parsed.hostname, parsed.port, e)


def require(test, name):
    """Skip (or, in CI, fail) ``test`` unless the server ``name`` answers."""
    problem = _reachable(name)
    if problem is None:
        return URLS[name]
    unavailable(test, problem)


def unavailable(test, problem):
    """A server ``test`` needs is missing, as ``problem`` says: skip it,
    or fail it when ``CYBORG_TEST_REQUIRE_SERVICES`` is set."""
    if services_required():
        test.fail('%s, and %s is set' % (problem, REQUIRE_ENV))
    test.skipTest('%s; set %s=1 to make this a failure'
                  % (problem, REQUIRE_ENV))
