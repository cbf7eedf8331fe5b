"""A real Placement service for functional tests.

The openstack-placement WSGI app (as the all-in-one embeds it, with its
own SQLite database) is served once per test process on a loopback port;
each test points ``[placement]`` at it and counts the requests it made.
Tests use hostnames of their own, so they do not see each other's
providers.
"""

import atexit
import contextlib
import shutil
import tempfile
import threading

import fixtures
from keystoneauth1 import loading as ks_loading

from cyborg.aio import placement as aio_placement
from cyborg.api import server as api_server
from cyborg.common.clients import placement as placement_client
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import daemons

#: A script serving Placement alone, as deployed, in a process of its
#: own: ``python -c SERVER STATE_DIR DATABASE_URL PORT`` (the URL of
#: its database: SQLite, or a server's).
SERVER = '''
import sys
import threading
from cyborg import conf
conf.CONF([], project='cyborg', default_config_files=[])
from cyborg.aio import placement
from cyborg.api import server
server.WSGIServer(placement.build_app(sys.argv[1], sys.argv[2]),
                  '127.0.0.1', int(sys.argv[3]), 16,
                  name='placement').start()
threading.Event().wait()
'''

_LOCK = threading.Lock()
_SERVICE = {}


class _Recorder:
    """WSGI middleware that records (method, path, query string) of every
    request."""

    def __init__(self, app):
        self.app = app
        self.requests = []

    def __call__(self, environ, start_response):
        self.requests.append((environ['REQUEST_METHOD'],
                              environ.get('PATH_INFO', ''),
                              environ.get('QUERY_STRING', '')))
        return self.app(environ, start_response)


def _service():
    """The process-wide server: (endpoint, recorder), started on first use.

    Placement configures its database once per process, so there is one.
    """
    with _LOCK:
        if not _SERVICE:
            state_dir = tempfile.mkdtemp(prefix='cyborg-placement-')
            atexit.register(shutil.rmtree, state_dir, True)
            recorder = _Recorder(aio_placement.build_app(state_dir))
            server = api_server.WSGIServer(recorder, '127.0.0.1', 0, 8,
                                           name='test-placement')
            server.start()
            # cheroot's worker threads are not daemons: stop them before
            # the interpreter waits for its threads at exit, which comes
            # before atexit's handlers (pytest without xdist hung there).
            threading._register_atexit(server.stop)
            _SERVICE.update(
                endpoint='http://127.0.0.1:%d' % server.port,
                recorder=recorder)
        return _SERVICE['endpoint'], _SERVICE['recorder']


def endpoint():
    """The URL of the test Placement service (started if need be)."""
    return _service()[0]


def _closed_port():
    """A loopback port nothing listens on (reserved for this process,
    so no other test's daemon takes it)."""
    return daemons.free_port()


class Placement(fixtures.Fixture):
    """Points ``conf``'s [placement] at the test Placement service."""

    def __init__(self, conf):
        super().__init__()
        self.conf = conf

    def _setUp(self):
        endpoint, self._recorder = _service()
        self.point_at(endpoint)
        self._mark = len(self._recorder.requests)

    def point_at(self, endpoint):
        """Point ``conf``'s [placement] (and ``client``) at ``endpoint``."""
        self.endpoint = endpoint
        self.conf.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group='placement')
        self.conf.set_override('auth_type', 'admin_token', group='placement')
        self.conf.set_override('token', 'admin', group='placement')
        self.conf.set_override('endpoint', self.endpoint, group='placement')
        self.client = placement_client.connect(self.conf)

    def requests(self, query=False):
        """Requests Placement received since the last call (or setUp), as
        (method, path), or with ``query`` (method, path?query)."""
        now = len(self._recorder.requests)
        made = self._recorder.requests[self._mark:now]
        self._mark = now
        if query:
            return [(m, '%s?%s' % (p, q) if q else p) for m, p, q in made]
        return [(m, p) for m, p, _q in made]

    @contextlib.contextmanager
    def down(self):
        """[placement] points at a port where nothing listens."""
        self.conf.set_override('endpoint', 'http://127.0.0.1:%d' %
                               _closed_port(), group='placement')
        try:
            yield
        finally:
            self.conf.set_override('endpoint', self.endpoint,
                                   group='placement')

    # What tests look at, through the same client code cyborg uses.

    def get(self, url, microversion='1.26'):
        response = self.client.get(url, microversion=microversion,
                                   raise_exc=False)
        return response.status_code, (response.json()
                                      if response.content else None)

    def create_compute_node(self, name, remove_after=False):
        """A root provider as Nova makes it. ``remove_after``: removed
        with its tree at the end of the test, for a name that is not the
        test's own (one Placement serves all the tests of a process)."""
        provider = placement_client.create_provider(self.client, name)
        if remove_after:
            self.addCleanup(self.remove_tree, provider['uuid'])
        return provider

    def remove_tree(self, root_uuid):
        """Delete the providers of a tree, leaves first, and the
        allocations of their consumers."""
        _, body = self.get('/resource_providers?in_tree=%s' % root_uuid,
                           microversion='1.14')
        parents = {p['uuid']: p['parent_provider_uuid']
                   for p in body['resource_providers']}

        def depth(rp_uuid):
            return 0 if not parents.get(rp_uuid) else 1 + depth(
                parents[rp_uuid])
        for rp_uuid in sorted(parents, key=depth, reverse=True):
            _, allocations = self.get('/resource_providers/%s/allocations'
                                      % rp_uuid)
            for consumer in allocations['allocations']:
                self.client.delete('/allocations/%s' % consumer,
                                   microversion='1.28', raise_exc=False)
            self.client.delete('/resource_providers/%s' % rp_uuid,
                               microversion='1.14', raise_exc=False)


def in_process_stack(test):
    """An SQLite database, in-process messaging and the real Placement for
    ``test``, as for a conductor and agents run in the test's process;
    returns the Placement fixture."""
    test.useFixture(cyborg_fixtures.Database(test, 'sqlite'))
    test.useFixture(cyborg_fixtures.Messaging(test, test.conf, 'fake'))
    return test.useFixture(Placement(test.conf))
