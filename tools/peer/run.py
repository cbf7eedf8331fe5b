"""The upstream peer suite against cyborg: the API tests of
cyborg-tempest-plugin, run by tempest, against ``cyborg-aio`` in keystone
mode behind a real Keystone (on SQLite), with oslo.policy's new defaults
and scope enforcement on. Started by ``tools/peer-suite``, which makes
the virtualenvs; see ``--help``.

With ``--api haproxy`` the endpoint tempest is given is HAProxy's, in
front of two uWSGI instances of the API, with the same keystone and
policy settings (``ha.py`` starts them and what is behind them); then
``test_clients.SDKTest`` calls every method of openstacksdk's
accelerator proxy through HAProxy (``check_clients``).

Everything listens on free loopback ports and lives in one work
directory, removed at the end unless ``--keep``. The exit status is
tempest's, or 1 when a test was skipped or any setup step failed.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import requests

from cyborg.tests.functional import daemons
import ha

# Tests that pin an upstream 500 where cyborg answers a 4xx on purpose
# (a bad request is the client's error, not the server's); each with its
# reason. Regular expressions over the test ids. Nothing else is skipped.
_DP_NEGATIVE = (r'^cyborg_tempest_plugin\.tests\.api\.'
                r'test_device_profile_negative\.DeviceProfileNegativeTest\.')
EXCEPTIONS = {
    _DP_NEGATIVE + r'test_create_device_profile_server_fault\b':
        'expects 500 for a device profile whose uuid is taken; cyborg '
        'answers 409 (a duplicate is a conflict, see reference-cyborg.md '
        '2.1)',
    _DP_NEGATIVE + r'test_create_device_profile_name_to_long\b':
        'expects 500 for a 256-character name (the database refuses it); '
        'cyborg checks the length and answers 400',
    _DP_NEGATIVE + r'test_create_device_profile_name_is_null\b':
        'expects 500 for an empty device profile name; cyborg answers 400 '
        '(upstream bug: the exception has no HTTP code)',
}

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
TESTS = r'^cyborg_tempest_plugin\.tests\.api\.'
REGION = 'RegionOne'
ADMIN_PASSWORD = 'peer-admin-' + uuid.uuid4().hex[:12]
SERVICE_PASSWORD = 'peer-cyborg-' + uuid.uuid4().hex[:12]
START_TIMEOUT = 120


def log(message):
    print('==> %s' % message, flush=True)


class Processes:
    """The servers this run started, stopped (process group and all) at
    the end."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.started = []

    def start(self, name, argv, env=None):
        path = os.path.join(self.workdir, name + '.log')
        with open(path, 'w') as out:
            process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
                env=dict(os.environ, **(env or {})), cwd=self.workdir)
        self.started.append((name, process, path))
        return process

    def wait_for(self, name, url, ok=(200, 300)):
        _, process, path = next(p for p in self.started if p[0] == name)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SystemExit('%s exited (%s):\n%s' % (
                    name, process.returncode, tail(path)))
            try:
                # The first request loads the application: give it time.
                if requests.get(url, timeout=60).status_code in ok:
                    return
            except (requests.ConnectionError, requests.Timeout):
                pass
            time.sleep(0.2)
        raise SystemExit('%s did not answer on %s within %d s:\n%s' % (
            name, url, START_TIMEOUT, tail(path)))

    def stop_all(self):
        for _name, process, _path in reversed(self.started):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for _name, process, _path in reversed(self.started):
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


def tail(path, lines=60):
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-lines:])
    except OSError as e:
        return '(%s)\n' % e


def run(argv, workdir, name, env=None):
    """A setup command; its output goes to ``<name>.log``."""
    path = os.path.join(workdir, name + '.log')
    with open(path, 'w') as out:
        result = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=workdir,
                                env=dict(os.environ, **(env or {})))
    if result.returncode:
        raise SystemExit('%s failed (%s):\n%s' % (' '.join(argv),
                                                  result.returncode,
                                                  tail(path)))


class Keystone:
    """keystone on SQLite with fernet tokens, served by gunicorn."""

    def __init__(self, venv, workdir, processes):
        self.bin = os.path.join(venv, 'bin')
        self.workdir = workdir
        self.processes = processes
        self.port = daemons.free_port()
        self.url = 'http://127.0.0.1:%d/v3' % self.port
        self.conf = os.path.join(workdir, 'keystone.conf')
        self.env = {'OS_KEYSTONE_CONFIG_FILES': self.conf}
        self._admin = None

    def manage(self, name, *args):
        run([os.path.join(self.bin, 'keystone-manage'), '--config-file',
             self.conf, *args], self.workdir, 'keystone-' + name)

    def start(self):
        keys = os.path.join(self.workdir, 'fernet-keys')
        daemons.write_config(self.conf, {
            'database': {'connection': 'sqlite:///%s' % os.path.join(
                self.workdir, 'keystone.sqlite')},
            'token': {'provider': 'fernet'},
            'fernet_tokens': {'key_repository': keys},
            'fernet_receipts': {'key_repository': keys},
            'credential': {'key_repository': os.path.join(
                self.workdir, 'credential-keys')},
            # Fast rather than strong: throw-away users on loopback, and
            # tempest makes seven of them per test class.
            'identity': {'password_hash_rounds': '4'},
            'cache': {'enabled': 'true',
                      'backend': 'dogpile.cache.memory'},
        })
        self.manage('db-sync', 'db_sync')
        user = ['--keystone-user', str(os.getuid()),
                '--keystone-group', str(os.getgid())]
        self.manage('fernet-setup', 'fernet_setup', *user)
        self.manage('credential-setup', 'credential_setup', *user)
        self.manage('bootstrap', 'bootstrap',
                    '--bootstrap-password', ADMIN_PASSWORD,
                    '--bootstrap-region-id', REGION,
                    '--bootstrap-admin-url', self.url,
                    '--bootstrap-public-url', self.url,
                    '--bootstrap-internal-url', self.url)
        self.processes.start('keystone', [
            os.path.join(self.bin, 'python'),
            os.path.join(HERE, 'keystone_server.py'), str(self.port)],
            env=self.env)
        self.processes.wait_for('keystone', self.url)

    def admin_session(self):
        if self._admin is None:
            self._admin = requests.Session()
            self._admin.headers['X-Auth-Token'] = self.token(
                'admin', ADMIN_PASSWORD, 'admin')
        return self._admin

    def create(self, path, key, body):
        response = self.admin_session().post(self.url + path,
                                             json={key: body}, timeout=60)
        if response.status_code != 201:
            raise SystemExit('POST %s: %s %s' % (
                path, response.status_code, response.text))
        return response.json()[key]

    def find(self, path, key, name):
        response = self.admin_session().get(self.url + path,
                                            params={'name': name}, timeout=60)
        response.raise_for_status()
        return response.json()[key][0]

    def user(self, name, password, project, role):
        """A user with ``role`` on ``project`` (made if new); the
        project's id."""
        try:
            found = self.find('/projects', 'projects', project)
        except IndexError:
            found = self.create('/projects', 'project', {
                'name': project, 'domain_id': 'default'})
        user = self.create('/users', 'user', {
            'name': name, 'domain_id': 'default', 'password': password})
        role = self.find('/roles', 'roles', role)
        response = self.admin_session().put(
            self.url + '/projects/%s/users/%s/roles/%s' % (
                found['id'], user['id'], role['id']), timeout=60)
        response.raise_for_status()
        return found['id']

    def token(self, name, password, project):
        """A project-scoped token of user ``name``."""
        response = requests.post(self.url + '/auth/tokens', timeout=60, json={
            'auth': {'identity': {'methods': ['password'], 'password': {
                'user': {'name': name, 'domain': {'id': 'default'},
                         'password': password}}},
                'scope': {'project': {'name': project,
                                      'domain': {'id': 'default'}}}}})
        response.raise_for_status()
        return response.headers['X-Subject-Token']

    def register_cyborg(self, endpoint):
        """The service project, cyborg's service user (role ``service``,
        which may validate tokens), and the accelerator service with its
        endpoints."""
        self.user('cyborg', SERVICE_PASSWORD, 'service', 'service')
        service = self.create('/services', 'service', {
            'name': 'cyborg', 'type': 'accelerator', 'enabled': True})
        for interface in ('public', 'internal', 'admin'):
            self.create('/endpoints', 'endpoint', {
                'service_id': service['id'], 'interface': interface,
                'region_id': REGION, 'url': endpoint})


def auth_sections(keystone):
    """cyborg's keystone_authtoken and policy settings, in both modes:
    keystone auth, new policy defaults and scope on."""
    return {
        'keystone_authtoken': {
            'www_authenticate_uri': keystone.url,
            'auth_url': keystone.url,
            'auth_type': 'password',
            'username': 'cyborg',
            'password': SERVICE_PASSWORD,
            'project_name': 'service',
            'user_domain_name': 'Default',
            'project_domain_name': 'Default',
            'service_token_roles_required': 'true',
        },
        'oslo_policy': {'enforce_new_defaults': 'true',
                        'enforce_scope': 'true'},
    }


def start_aio(workdir, processes, keystone):
    """cyborg-aio in keystone mode; its endpoint."""
    port = daemons.free_port()
    config = daemons.write_config(os.path.join(workdir, 'cyborg.conf'), dict(
        auth_sections(keystone),
        DEFAULT={'auth_strategy': 'keystone', 'host': 'peer-suite'}))
    processes.start('cyborg-aio', [
        sys.executable, '-m', 'cyborg.cmd.aio', '--port', str(port),
        '--state-dir', os.path.join(workdir, 'cyborg-state'),
        '--config-file', config])
    base = 'http://127.0.0.1:%d' % port
    processes.wait_for('cyborg-aio', base + '/v2')
    return base + '/v2'


def tempest_config(path, keystone):
    return daemons.write_config(path, {
        'DEFAULT': {'log_file': 'tempest.log'},
        'auth': {'use_dynamic_credentials': 'true',
                 'admin_username': 'admin',
                 'admin_password': ADMIN_PASSWORD,
                 'admin_project_name': 'admin',
                 'admin_domain_name': 'Default',
                 'create_isolated_networks': 'false'},
        'identity': {'uri_v3': keystone.url, 'auth_version': 'v3',
                     'region': REGION},
        'identity-feature-enabled': {'api_v2': 'false'},
        'service_available': {'cyborg': 'true', 'nova': 'false',
                              'glance': 'false', 'neutron': 'false',
                              'cinder': 'false', 'swift': 'false'},
        'cyborg_policy': {'enforce_new_defaults': 'true'},
    })


def run_tempest(venv, workdir, keystone, workers):
    tempest = os.path.join(venv, 'bin', 'tempest')
    home = os.path.join(workdir, 'tempest')
    # Its own workspace registry: not ~/.tempest, where a name is taken
    # once used.
    run([tempest, 'init', '--workspace-path',
         os.path.join(workdir, 'workspaces.yaml'), home], workdir,
        'tempest-init')
    tempest_config(os.path.join(home, 'etc', 'tempest.conf'), keystone)
    exclude = os.path.join(workdir, 'exclude.txt')
    with open(exclude, 'w') as f:
        f.writelines(pattern + '\n' for pattern in EXCEPTIONS)
    for pattern, reason in EXCEPTIONS.items():
        log('not run: %s: %s' % (pattern, reason))
    argv = [tempest, 'run', '--regex', TESTS, '--exclude-list', exclude,
            '--concurrency', str(workers)]
    log('running %s' % ' '.join(argv[1:]))
    result = subprocess.run(argv, cwd=home, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    counts = {name: int(number) for name, number in re.findall(
        r'^\s*- (Passed|Failed|Skipped):\s*(\d+)', result.stdout, re.M)}
    status = result.returncode
    if status == 0 and (not counts.get('Passed') or counts.get('Skipped')):
        log('tests were skipped (or none passed); only the exceptions '
            'above may be left out')
        status = 1
    return status, counts


def check_clients(keystone, deployment, workdir):
    """Every public method of openstacksdk's accelerator proxy, once,
    through HAProxy: the clients' test (test_clients.SDKTest) run against
    the deployment, with Keystone users for its roles. Its exit status."""
    import openstack.version

    from cyborg.tests.functional import clients
    from cyborg.tests.functional import test_clients

    users, projects = {'admin': ['admin', ADMIN_PASSWORD, 'admin']}, {}
    for role, project in (('member', 'sdk-project'),
                          ('other', 'sdk-other-project')):
        password = 'peer-%s-%s' % (role, uuid.uuid4().hex[:12])
        projects[role] = keystone.user('sdk-' + role, password, project,
                                       'member')
        users[role] = ['sdk-' + role, password, project]
    target = os.path.join(workdir, 'clients-target.json')
    with open(target, 'w') as f:
        json.dump({
            'base': deployment.base, 'hostname': ha.AGENT_HOST,
            'project': projects['member'], 'image': deployment.image['id'],
            'admin_token': keystone.token('admin', ADMIN_PASSWORD, 'admin'),
            'service_token': keystone.token('cyborg', SERVICE_PASSWORD,
                                            'service'),
            'auth_url': keystone.url, 'region': REGION, 'users': users}, f)
    methods = sorted(test_clients.proxy_methods())
    log('openstacksdk %s: the %d methods of its accelerator proxy, each '
        'through HAProxy (test_clients.SDKTest): %s' % (
            openstack.version.__version__, len(methods), ', '.join(methods)))
    before = deployment.served()
    result = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
         '-p', 'no:warnings',
         'cyborg/tests/functional/test_clients.py::SDKTest'],
        cwd=TOP, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        env=dict(os.environ, **{clients.TARGET_ENV: target}))
    sys.stdout.write(result.stdout[-6000:])
    sys.stderr.write(result.stderr[-3000:])
    log('the clients\' check: %s; HAProxy sent its requests to %s' % (
        'passed, %d of %d methods called' % (len(methods), len(methods))
        if result.returncode == 0 else 'FAILED',
        served_since(deployment, before)))
    return result.returncode


def served_since(deployment, before):
    after = deployment.served()
    return ', '.join('%s %d' % (name, count - before.get(name, 0))
                     for name, count in sorted(after.items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--peer-venv', required=True,
                        help='virtualenv with keystone and tempest')
    parser.add_argument('--workers', type=int, default=2,
                        help='tempest workers (default %(default)s)')
    parser.add_argument('--api', choices=('aio', 'haproxy'), default='aio',
                        help='what tempest talks to: cyborg-aio (default), '
                        'or two uWSGI API instances behind HAProxy with a '
                        'conductor and an agent on MariaDB and RabbitMQ')
    parser.add_argument('--keep', action='store_true',
                        help='keep the work directory (logs, configs)')
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix='cyborg-peer-')
    processes = Processes(workdir)
    owner = ha.Owner()
    owner.setUp()
    deployment = None
    started = time.monotonic()
    status, counts = 1, {}
    try:
        log('keystone (work directory %s)' % workdir)
        keystone = Keystone(args.peer_venv, workdir, processes)
        keystone.start()
        if args.api == 'haproxy':
            log('two uWSGI API instances behind HAProxy, a conductor and an '
                'agent, on MariaDB and RabbitMQ, in keystone mode')
            deployment = ha.HADeployment(workdir, owner,
                                         auth_sections(keystone),
                                         START_TIMEOUT)
            endpoint = deployment.start()
        else:
            log('cyborg-aio in keystone mode')
            endpoint = start_aio(workdir, processes, keystone)
        log('the accelerator endpoint: %s' % endpoint)
        keystone.register_cyborg(endpoint)
        before = deployment.served() if deployment else None
        status, counts = run_tempest(args.peer_venv, workdir, keystone,
                                     args.workers)
        if deployment:
            log('tempest through HAProxy: requests sent to %s' % (
                served_since(deployment, before)))
            status = check_clients(keystone, deployment, workdir) or status
    finally:
        owner.cleanUp()
        processes.stop_all()
        log('peer suite (--api %s) took %.0f s' % (
            args.api, time.monotonic() - started))
        if status:
            logs = [path for _name, _process, path in processes.started]
            for path in logs + (deployment.logs if deployment else []):
                print('---- last lines of %s\n%s' % (path, tail(path)))
        if status or args.keep:
            log('logs and configs kept in %s' % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print('peer-suite (--api %s): %d passed, %d failed' % (
        args.api, counts.get('Passed', 0), counts.get('Failed', 0)),
        flush=True)
    return status


if __name__ == '__main__':
    sys.exit(main())
