"""OpenStack Cyborg itself, for the tests that adopt its databases.

Each release the tests use has a requirements file in
``tools/lib/upstream-cyborg/``; its virtualenv is made once, as
``tools/nova-e2e`` makes Nova's, under ``$CYBORG_UPSTREAM_CACHE``
(default ``~/.cache/cyborg-upstream``) in a directory keyed on a hash of
that file, and reused by every later run (``cached_venv``, which
``test_cyborgclient.py`` and ``test_osc.py`` use for the clients' too). When
it cannot be made (PyPI unreachable, say) the tests are skipped with the
reason, or fail under ``CYBORG_TEST_REQUIRE_SERVICES``.

``Database`` is one upstream database on a shared server: created with a
unique name, given upstream's schema by upstream's own ``cyborg-dbsync``
and filled by ``cyborg/tests/functional/db/upstream_fill.py``
run with upstream's Python; dropped when the test module ends.
"""

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import uuid

import sqlalchemy as sa

from cyborg.tests import services

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                   '..'))
REQUIREMENTS = os.path.join(TOP, 'tools', 'lib', 'upstream-cyborg')
FILL = os.path.join(os.path.dirname(__file__), 'db', 'upstream_fill.py')
CACHE = os.environ.get('CYBORG_UPSTREAM_CACHE', os.path.join(
    os.path.expanduser('~'), '.cache', 'cyborg-upstream'))

# pip may have to resolve and download a whole OpenStack service.
INSTALL_TIMEOUT = 1200
COMMAND_TIMEOUT = 300


class Unavailable(Exception):
    """Upstream cannot be installed or run here; the reason."""


def _env():
    """The environment upstream's commands run in: without our PYTHONPATH,
    whose ``cyborg`` would shadow upstream's."""
    env = dict(os.environ, PYTHONWARNINGS='ignore')
    env.pop('PYTHONPATH', None)
    return env


#: path: the Unavailable making the virtualenv there raised in this
#: process.
_FAILED = {}


def prepare(release):
    """Make the virtualenv of upstream ``release`` now if it is missing,
    remembering why not. For a test class's ``setUpClass``: the first run
    on a machine installs a whole OpenStack service from PyPI, which must
    not happen inside a test's own timeout (``cyborg.tests.base``)."""
    try:
        venv(release)
    except Unavailable:
        pass


def venv(release):
    """The bin directory of the virtualenv of upstream ``release``, made
    if there is none yet (see ``cached_venv``)."""
    requirements = os.path.join(REQUIREMENTS, 'requirements-%s.txt' % release)
    return cached_venv('venv-%s' % release, [requirements],
                       ['-r', requirements], 'upstream Cyborg from %s'
                       % os.path.basename(requirements))


def cached_venv(name, inputs, pip_args, what, key=()):
    """The bin directory of a virtualenv under ``CACHE`` made with ``pip
    install pip_args``, named ``name`` and a hash of the contents of the
    files ``inputs`` and of the strings ``key`` (what of ``pip_args``
    is not in those files: package names, say; not the files' paths,
    which differ between clones), so that a change to either makes a
    new one. Made once: concurrent callers, in other processes too, wait
    for the first; later calls find it made. One that could not be made
    raises its Unavailable (``what`` names what is installed) again,
    without trying twice in one process."""
    digest = hashlib.sha256()
    for input_file in inputs:
        with open(input_file, 'rb') as f:
            digest.update(f.read())
    if key:
        digest.update(json.dumps(list(key)).encode())
    path = os.path.join(CACHE, '%s-%s' % (name, digest.hexdigest()[:16]))
    if path in _FAILED:
        raise _FAILED[path]
    try:
        return _make(path, pip_args, what)
    except Unavailable as e:
        _FAILED[path] = e
        raise


def _make(path, pip_args, what):
    stamp = os.path.join(path, '.installed')
    if os.path.exists(stamp):
        return os.path.join(path, 'bin')
    os.makedirs(CACHE, exist_ok=True)
    with open(path + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(stamp):
            _install(path, pip_args, what)
            with open(stamp, 'w'):
                pass
    return os.path.join(path, 'bin')


def _install(path, pip_args, what):
    for argv in (['python3', '-m', 'venv', '--clear', path],
                 [os.path.join(path, 'bin', 'python'), '-m', 'pip',
                  'install', '-qq'] + list(pip_args)):
        try:
            done = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=INSTALL_TIMEOUT, env=_env())
        except subprocess.TimeoutExpired as e:
            raise Unavailable('installing %s took over %d s'
                              % (what, INSTALL_TIMEOUT)) from e
        if done.returncode:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
            raise Unavailable('cannot install %s (is PyPI reachable?): %s'
                              % (what, ' '.join(tail)))


def _run(argv, what):
    done = subprocess.run(argv, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT, env=_env(), cwd=CACHE)
    if done.returncode:
        raise RuntimeError('%s failed (%d): %s' % (
            what, done.returncode, done.stderr[-2000:]))
    return done.stdout


class Database:
    """An upstream database of ``release`` on the ``backend`` server
    (``server_url``), with upstream's schema and rows. ``url`` reaches
    it; ``written`` is what the fill script says it wrote."""

    def __init__(self, release, backend, server_url):
        self.release = release
        self.backend = backend
        self.name = 'cyborg_upstream_%s' % uuid.uuid4().hex[:12]
        self.admin = sa.create_engine(server_url,
                                      isolation_level='AUTOCOMMIT')
        self.url = sa.engine.make_url(server_url).set(
            database=self.name).render_as_string(hide_password=False)
        self.written = None

    def create(self, directory):
        """Create, migrate and fill it; ``directory`` takes the config."""
        bin_dir = venv(self.release)
        with self.admin.connect() as connection:
            connection.execute(sa.text('CREATE DATABASE %s' % self.name))
        config = os.path.join(directory, 'upstream-%s.conf' % self.name)
        with open(config, 'w') as f:
            f.write('[database]\nconnection = %s\n' % self.url)
        fill = [os.path.join(bin_dir, 'python'), FILL, config]
        if self.backend == 'postgresql':
            # Neither of upstream's own commands makes its schema on
            # PostgreSQL (see upstream_fill.py): the fill script does,
            # from upstream's models.
            fill.append('--create-schema')
        else:
            _run([os.path.join(bin_dir, 'cyborg-dbsync'), '--config-file',
                  config, 'upgrade'], "upstream's cyborg-dbsync upgrade")
        self.written = json.loads(_run(
            fill, 'filling the upstream database').strip().splitlines()[-1])
        return self

    def drop(self):
        with self.admin.connect() as connection:
            if self.backend == 'postgresql':
                connection.execute(sa.text(
                    'DROP DATABASE IF EXISTS %s WITH (FORCE)' % self.name))
            else:
                connection.execute(sa.text('DROP DATABASE IF EXISTS %s'
                                           % self.name))
        self.admin.dispose()


class Databases:
    """Upstream databases made once per (release, backend) for a test
    module, and dropped at its end (``drop_all``)."""

    def __init__(self):
        self._made = {}
        self._directory = None

    def make(self, release, backend):
        """Make the Database of ``release`` on ``backend`` now, unless
        made (or failed) already; what went wrong is kept for ``get``.
        For ``setUpClass``: installing upstream, its migrations and the
        fill take minutes on a loaded machine, more than a test's own
        timeout (``cyborg.tests.base``) allows inside ``setUp``."""
        key = (release, backend)
        if key in self._made or services._reachable(backend) is not None:
            return
        database = Database(release, backend, services.URLS[backend])
        if self._directory is None:
            self._directory = tempfile.mkdtemp(prefix='cyborg-upstream-')
        try:
            self._made[key] = database.create(self._directory)
        except Exception as e:
            # Not again for every test of the module.
            self._made[key] = e
            database.drop()

    def get(self, test, release, backend):
        """The Database of ``release`` on ``backend``; skips (or fails,
        as ``services.require`` does) ``test`` when the server or
        upstream's installation is not available."""
        services.require(test, backend)
        self.make(release, backend)
        made = self._made[(release, backend)]
        if isinstance(made, Unavailable):
            services.unavailable(test, str(made))
        if isinstance(made, Exception):
            raise made
        return made

    def drop_all(self):
        for made in self._made.values():
            if isinstance(made, Database):
                made.drop()
        self._made.clear()
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None
