"""What one Nova boot costs the database, step by step: the statements
(COMMIT and ROLLBACK included) that the API and the conductor send for
each request of Nova's boot cycle, counted, not timed, so that a change
that adds a round trip to the path of every server Nova boots fails
here. The counts are those of ``doc/source/admin/benchmarks.rst``."""

import collections
import re
import threading

import sqlalchemy as sa

from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import test_accelerator_requests as arqs

# The first word of a statement: its kind.
_KIND = re.compile(r'\s*(\w+)')


def _who():
    """Who runs a statement: the API (the request runs in the test's
    thread, webtest calls the application), the conductor's RPC
    endpoints, or the conductor's thread that tells Nova."""
    thread = threading.current_thread()
    if thread is threading.main_thread():
        return 'api'
    if thread.name.startswith('cyborg-rpc'):
        return 'conductor'
    if thread.name == 'coalescer':
        return 'events'
    # A periodic task of the conductor: not the boot's cost.
    return None


class StatementLog:
    """Every statement the engine sends, with who sent it, and every
    COMMIT and ROLLBACK of a transaction."""

    def __init__(self, test, engine):
        self.seen = []
        self.lock = threading.Lock()
        listeners = [('before_cursor_execute', self._statement),
                     ('commit', self._ended('COMMIT')),
                     ('rollback', self._ended('ROLLBACK'))]
        for name, listener in listeners:
            sa.event.listen(engine, name, listener)
            test.addCleanup(sa.event.remove, engine, name, listener)

    def _add(self, statement):
        who = _who()
        if who is not None:
            with self.lock:
                self.seen.append((who, statement))

    def _statement(self, _conn, _cursor, statement, *_args):
        self._add(' '.join(statement.split()))

    def _ended(self, kind):
        def listener(_conn):
            self._add(kind)
        return listener

    def take(self):
        """{who: [statement kinds]} since the last take."""
        with self.lock:
            seen, self.seen = self.seen, []
        found = collections.defaultdict(list)
        for who, statement in seen:
            found[who].append(_KIND.match(statement).group(1).upper())
        return dict(found)


# Per step of Nova's boot cycle (an ARQ of one accelerator), the
# statements the API and the conductor's endpoints send; under
# 'events', those of the conductor's thread that tells Nova, whenever
# in the cycle it ran. The API's routing, request context and policy
# read nothing. On SQLite each transaction starts with a BEGIN too.
#
# 19 in all on MariaDB. Before 2026-11-28 a boot cost 26: the API read
# the ARQs it had just created (SELECT, ROLLBACK), the bind read the
# deployable, the ARQs and a free handle in three statements and wrote
# each ARQ twice (to BindStarted, then to Bound), and the events' thread
# read the ARQs the bind had just committed (SELECT, ROLLBACK).
BOOT = {
    'profile': {'api': ['SELECT', 'ROLLBACK']},
    'create': {'conductor': ['SELECT', 'INSERT', 'COMMIT']},
    # The ARQs with the provider's deployable and its first free handle,
    # that handle taken, the ARQ moved to Bound with it, whether the
    # instance has other ARQs (with a lock).
    'bind': {'conductor': ['SELECT', 'UPDATE', 'UPDATE', 'SELECT',
                           'COMMIT']},
    'resolved': {'api': ['SELECT', 'ROLLBACK']},
    # The ARQs and their hosts, their handles released, the ARQs
    # deleted, which of their hosts are to report again.
    'delete': {'conductor': ['SELECT', 'UPDATE', 'DELETE', 'SELECT',
                             'COMMIT']},
    # The ARQs marked as told, once Nova took their events.
    'events': {'events': ['UPDATE', 'COMMIT']},
}
# PostgreSQL takes a lock on the instance first (SELECT
# pg_advisory_xact_lock).
POSTGRESQL_BIND = ['SELECT'] + BOOT['bind']['conductor']


class _BootStatementsTests(arqs.ARQSetup):

    def setUp(self):
        super().setUp()
        # A first boot: what the application reads once is not a
        # boot's cost.
        self.boot(lambda step: None)
        self.log = StatementLog(self, self.db.engine)

    def boot(self, step):
        """Nova's boot cycle; ``step(name)`` after each request."""
        response = self.get('/v2/device_profiles', name=arqs.PROFILE,
                            headers=arqs.NOVA_USER, service=True)
        self.assertEqual(200, response.status_int, response.body)
        step('profile')
        created = self.create()
        step('create')
        instance, response = self.bind(created)
        self.assertEqual(202, response.status_int, response.body)
        step('bind')
        response = self.get(arqs.PATH, headers=arqs.NOVA_USER, service=True,
                            instance=instance, bind_state='resolved')
        self.assertEqual(200, response.status_int, response.body)
        step('resolved')
        self.told()
        step('events')
        response = self.delete(arqs.PATH, headers=arqs.NOVA_USER,
                               service=True, instance=instance)
        self.assertEqual(204, response.status_int, response.body)
        step('delete')

    def measure(self):
        """{step: {who: [statement kinds]}}, without SQLite's BEGIN."""
        counts, events = {}, []

        def step(name):
            taken = self.log.take()
            events.extend(taken.pop('events', []))
            counts[name] = taken
        self.boot(step)
        counts['events'] = {'events': events}
        return {name: {who: [kind for kind in kinds if kind != 'BEGIN']
                       for who, kinds in seen.items()}
                for name, seen in counts.items()}

    def expected(self):
        expected = dict(BOOT)
        if self.backend == 'postgresql':
            expected['bind'] = {'conductor': POSTGRESQL_BIND}
        return expected

    def test_statements_per_boot_step(self):
        self.assertEqual(self.expected(), self.measure())

    def test_two_arqs_of_one_instance_one_bind(self):
        """Nova's request for two accelerators: still one transaction
        per step, a statement more per ARQ where each is written."""
        self.post('/v2/device_profiles', [{'name': 'two', 'groups': [
            dict(arqs.GROUP, **{'resources:FPGA': '2'})]}])
        created = self.create(profile='two')
        self.assertEqual(2, len(created))
        self.log.take()
        instance, response = self.bind(created)
        self.assertEqual(202, response.status_int, response.body)
        bind = self.log.take()['conductor']
        # The second ARQ: the free handle read with the ARQs went to
        # the first, so it reads one and takes it, and its own
        # compare-and-swap; the ARQs and the deployable read once.
        expected = list(self.expected()['bind']['conductor'])
        expected[-2:-2] = ['SELECT', 'UPDATE', 'UPDATE']
        self.assertEqual(expected, [k for k in bind if k != 'BEGIN'])
        self.assertEqual(1, bind.count('COMMIT'))


class SQLiteBootStatementsTest(_BootStatementsTests,
                               base.APIResourceTestCase):
    backend = 'sqlite'


class MySQLBootStatementsTest(_BootStatementsTests,
                              base.APIResourceTestCase):
    backend = 'mysql'


class PostgreSQLBootStatementsTest(_BootStatementsTests,
                                   base.APIResourceTestCase):
    backend = 'postgresql'
