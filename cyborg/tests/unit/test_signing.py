"""Signed RPC messages: keys, signatures, who may send what, replays,
rotation and the upgrade switch; and the conductor and an agent served on
the in-process transport refusing what they must."""

import contextlib
import io
import logging
import json
import os
import re
import time
import types

import fixtures
import oslo_messaging as messaging

from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.cmd import keys as keys_cmd
from cyborg.cmd import status
from cyborg.common import broker
from cyborg.common import context
from cyborg.common import exception
from cyborg.common import keys
from cyborg.common import rpc
from cyborg.common import signing
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures

TOPIC = 'cyborg-conductor'
MESSAGE = {'method': 'report_data', 'args': {'hostname': 'cmp-1'},
           'version': '1.6'}
CTXT = {'user': None, 'project_id': 'p', 'roles': ['admin']}


class KeysTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def test_create_keeps_an_existing_key_and_rotation_adds_then_retires(self):
        path, created = keys.create(self.dir, 'host:cmp-1')
        self.assertTrue(created)
        self.assertEqual(0o600, os.stat(path).st_mode & 0o777)
        [first] = keys.read(path)
        self.assertEqual((path, False), keys.create(self.dir, 'host:cmp-1'))
        keys.rotate(self.dir, 'host:cmp-1')
        both = keys.read(path)
        self.assertEqual(2, len(both))
        self.assertEqual(first, both[0])
        keys.retire(self.dir, 'host:cmp-1')
        self.assertEqual(both[1:], keys.read(path))

    def test_host_names_cannot_leave_the_key_directory(self):
        for bad in ('../x', 'a/b', '', '.hidden', None):
            self.assertRaises(exception.Invalid, keys.host_identity, bad)
        self.assertRaises(exception.Invalid, keys.file_name, 'conductor')

    def test_store_reads_a_changed_file_again_and_says_what_is_missing(self):
        store = keys.KeyStore(self.dir)
        self.assertRaises(exception.RPCKeyMissing, store.keys, keys.API)
        keys.create(self.dir, keys.API)
        old = store.keys(keys.API)
        keys.rotate(self.dir, keys.API)
        self.assertEqual(2, len(store.keys(keys.API)))
        self.assertEqual(old, store.keys(keys.API)[:1])

    def test_own_key_file_of_an_agent(self):
        own = os.path.join(self.dir, 'elsewhere.key')
        keys.write(own, [keys.new_key()])
        store = keys.KeyStore(os.path.join(self.dir, 'none'), own, 'cmp-1')
        self.assertEqual(keys.read(own), store.keys('host:cmp-1'))
        self.assertRaises(exception.RPCKeyMissing, store.keys, 'host:cmp-2')

    def test_a_bad_key_file_is_refused_with_its_line(self):
        path = os.path.join(self.dir, 'api.key')
        with open(path, 'w') as f:
            f.write('# comment\nnot-a-key\n')
        os.chmod(path, 0o600)
        error = self.assertRaises(exception.RPCKeyMissing, keys.read, path)
        self.assertIn('line 2', str(error))

    def test_a_key_file_open_to_group_or_others_is_refused(self):
        path, _created = keys.create(self.dir, keys.API)
        store = keys.KeyStore(self.dir)
        store.keys(keys.API)
        for mode in (0o640, 0o604, 0o620, 0o602, 0o644):
            os.chmod(path, mode)
            for read in (lambda: keys.read(path),
                         lambda: store.keys(keys.API)):
                error = self.assertRaises(exception.RPCKeyInsecure, read)
                self.assertIn(path, str(error))
                self.assertIn('%04o' % mode, str(error))
                self.assertIn('chmod 600 %s' % path, str(error))
            self.assertRaises(exception.RPCKeyInsecure, keys.rotate,
                              self.dir, keys.API)
        os.chmod(path, 0o400)
        self.assertEqual(keys.read(path), store.keys(keys.API))

    def test_key_files_are_written_0600_whatever_the_umask(self):
        old = os.umask(0)
        self.addCleanup(os.umask, old)
        path, _created = keys.create(self.dir, keys.API)
        self.assertEqual(0o600, os.stat(path).st_mode & 0o777)
        for change in (keys.rotate, keys.retire):
            change(self.dir, keys.API)
            self.assertEqual(0o600, os.stat(path).st_mode & 0o777)
        own = os.path.join(self.dir, 'own', 'own.key')
        keys.write(own, [keys.new_key()])
        self.assertEqual(0o600, os.stat(own).st_mode & 0o777)
        self.assertEqual(0o700, os.stat(os.path.dirname(own)).st_mode
                         & 0o777)


class VerifierTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.store = keys.KeyStore(self.dir)
        for identity in (keys.API, 'host:cmp-1', 'host:cmp-2'):
            keys.create(self.dir, identity)
        self.conductor = signing.Verifier(self.store, self.conf,
                                          signing.CONDUCTOR_ROLE, TOPIC, None)
        self.agent = signing.Verifier(self.store, self.conf,
                                      signing.AGENT_ROLE, 'cyborg-agent',
                                      'cmp-1')

    def signed(self, sender, key_of=None, target=None, message=MESSAGE):
        target = target or signing.target_of(TOPIC)
        key_list = self.store.keys(key_of or signing.sender_key_identity(
            sender, target))
        return signing.sign(key_list, sender, target, CTXT, message)

    def refused(self, verifier, ctxt, message=MESSAGE):
        return self.assertRaises(signing.Refused, verifier.verify, ctxt,
                                 message)

    def test_a_host_is_proven_by_its_own_key_only(self):
        sender, signed = self.conductor.verify(self.signed('host:cmp-1'),
                                               MESSAGE)
        self.assertEqual('host:cmp-1', sender)
        self.assertEqual(CTXT, signed)
        error = self.refused(self.conductor, self.signed(
            'host:cmp-2', key_of='host:cmp-1'))
        self.assertEqual(('host:cmp-2', None), (error.claimed, error.proven))

    def test_anything_changed_after_signing_is_refused(self):
        ctxt = self.signed('host:cmp-1')
        for changed in (dict(MESSAGE, method='arq_delete'),
                        dict(MESSAGE, args={'hostname': 'cmp-2'}),
                        dict(MESSAGE, version='1.0')):
            self.refused(self.conductor, ctxt, changed)
        self.refused(self.conductor, dict(ctxt, roles=['admin', 'x']))

    def test_a_message_is_taken_once_and_only_while_fresh(self):
        ctxt = self.signed('host:cmp-1')
        self.conductor.verify(ctxt, MESSAGE)
        self.assertEqual('replayed message',
                         self.refused(self.conductor, ctxt).reason)
        now = time.time()
        self.useFixture(fixtures.MockPatch('time.time',
                                           return_value=now - 3600))
        old = self.signed('host:cmp-1')
        self.useFixture(fixtures.MockPatch('time.time', return_value=now))
        self.assertIn('window', self.refused(self.conductor, old).reason)

    def test_malformed_signatures_are_refused(self):
        good = self.signed('host:cmp-1')
        for auth in ({}, {'sender': ['host:cmp-1']}, 'x',
                     dict(good[signing.AUTH], sender=['x']),
                     dict(good[signing.AUTH], context=[['x']]),
                     dict(good[signing.AUTH], sender='host:../../etc')):
            self.refused(self.conductor, dict(good, **{signing.AUTH: auth}))

    def test_a_time_that_is_not_a_finite_number_is_refused(self):
        for sent in ('nan', 'inf', '-inf', float('nan'), float('inf')):
            with fixtures.MockPatch('time.time', return_value=sent):
                ctxt = self.signed('host:cmp-1')
            error = self.refused(self.conductor, ctxt)
            self.assertEqual('malformed signature', error.reason, sent)

    def test_the_window_is_one_rule(self):
        self.flags(max_message_age=60, group='security')
        now = time.time()
        self.assertLessEqual(now, signing.check_window(now - 59, self.conf,
                                                       'host:cmp-1'))
        for sent in (now - 61, now + 61):
            error = self.assertRaises(signing.Refused, signing.check_window,
                                      sent, self.conf, 'host:cmp-1')
            self.assertIn('beyond the 60 s window', error.reason)
            self.assertEqual('host:cmp-1', error.proven)

    def test_unsigned_only_while_upgrading(self):
        self.refused(self.conductor, dict(CTXT))
        self.flags(require_signed=False, group='security')
        self.assertEqual((None, CTXT), self.conductor.verify(dict(CTXT),
                                                             MESSAGE))
        # A signature that does not verify is refused all the same.
        self.refused(self.conductor, self.signed('api', key_of='host:cmp-1'))

    def test_an_agent_takes_only_the_conductor_with_its_own_key(self):
        to_cmp1 = signing.target_of('cyborg-agent', 'cmp-1')
        sender, _ = self.agent.verify(self.signed(
            keys.CONDUCTOR, target=to_cmp1), MESSAGE)
        self.assertEqual(keys.CONDUCTOR, sender)
        # Signed for another host, or by a host, or by the API.
        self.refused(self.agent, self.signed(
            keys.CONDUCTOR, target=signing.target_of('cyborg-agent',
                                                     'cmp-2')))
        self.refused(self.agent, self.signed(
            keys.CONDUCTOR, key_of='host:cmp-2', target=to_cmp1))
        for sender in ('host:cmp-1', keys.API):
            self.refused(self.agent, self.signed(sender, key_of='host:cmp-1',
                                                 target=to_cmp1))

    def test_the_conductor_cannot_sign_a_message_to_every_host(self):
        self.assertRaises(exception.RPCKeyMissing,
                          signing.sender_key_identity, keys.CONDUCTOR,
                          signing.target_of('cyborg-agent', fanout=True))

    def test_rotation_keeps_both_sides_talking(self):
        # The conductor's copy has the new key first; the host's not yet.
        ctxt = self.signed('host:cmp-1')
        keys.rotate(self.dir, 'host:cmp-1')
        self.conductor.verify(ctxt, MESSAGE)
        old, new = keys.read(os.path.join(self.dir, 'host.cmp-1.key'))
        ctxt = signing.sign([new], 'host:cmp-1', signing.target_of(TOPIC),
                            CTXT, MESSAGE)
        self.conductor.verify(ctxt, MESSAGE)
        keys.retire(self.dir, 'host:cmp-1')
        ctxt = signing.sign([old], 'host:cmp-1', signing.target_of(TOPIC),
                            CTXT, MESSAGE)
        self.refused(self.conductor, ctxt)

    def test_host_methods_are_the_proven_hosts_and_the_rest_the_apis(self):
        manager = conductor_manager.ConductorManager
        args = {'hostname': 'cmp-1', 'uuids': ['x']}
        self.conductor.authorize('host:cmp-1', 'report_data',
                                 manager.report_data, args)
        error = self.assertRaises(
            signing.Refused, self.conductor.authorize, 'host:cmp-2',
            'report_data', manager.report_data, args)
        self.assertEqual(('host:cmp-1', 'host:cmp-2'),
                         (error.claimed, error.proven))
        hello = host_obj.AgentHello(hostname='cmp-1')
        self.conductor.authorize('host:cmp-1', 'agent_hello',
                                 manager.agent_hello, {'hello': hello})
        self.assertRaises(signing.Refused, self.conductor.authorize,
                          keys.API, 'agent_hello', manager.agent_hello,
                          {'hello': hello})
        self.conductor.authorize(keys.API, 'device_profile_delete',
                                 manager.device_profile_delete, args)
        self.assertRaises(signing.Refused, self.conductor.authorize,
                          'host:cmp-1', 'device_profile_delete',
                          manager.device_profile_delete, args)


class SecurityLogTest(base.TestCase):
    """What a refusal writes to the log: bounded, one line each, and at
    most a line a minute per receiver however many come."""

    def setUp(self):
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger(
            name='cyborg.security', level=logging.WARNING))
        self.verifier = signing.Verifier(None, self.conf,
                                         signing.CONDUCTOR_ROLE, TOPIC, None)

    def test_wire_values_are_cut_short_and_escaped(self):
        self.assertEqual('host:cmp-1', signing.loggable('host:cmp-1'))
        self.assertEqual('a' * 64 + '...', signing.loggable('a' * 5000000))
        self.assertEqual('x\\nSECURITY: forged',
                         signing.loggable('x\nSECURITY: forged'))
        self.assertEqual('\\x00\\x1b[31m\\u2028\\\\n',
                         signing.loggable('\x00\x1b[31m\u2028\\n'))
        # An escape is never cut in two.
        self.assertEqual('ab...', signing.loggable('ab\n', 3))
        self.assertEqual("['x']", signing.loggable(['x']))

    def test_a_refusal_is_one_bounded_line(self):
        self.verifier.log_refusal(signing.Refused(
            'no signature verifies with a key of %s' % ('h\n' * 10 ** 6),
            claimed='host:' + 'h\n' * 10 ** 6), 'm\nSECURITY: x' * 1000)
        [line] = self.logs.output.splitlines()
        self.assertLess(len(line), 600)
        self.assertIn('refused RPC m\\nSECURITY: x', line)
        self.assertIn('claimed sender host:h\\nh\\n', line)
        self.assertEqual(3, line.count('...'))

    def test_a_flood_is_logged_once_then_once_a_minute(self):
        refusals = self.verifier.refusals
        refusals.clock = lambda: now
        now = 1000.0
        for number in range(1000):
            self.verifier.log_refusal(signing.Refused(
                'replayed message', claimed='host:cmp-%d' % number),
                'report_data')
        self.assertEqual(1, len(self.logs.output.splitlines()))
        now += 61
        self.verifier.log_refusal(signing.Refused('last one'), 'x')
        lines = self.logs.output.splitlines()
        self.assertEqual(2, len(lines))
        self.assertIn('SECURITY: conductor refused 1000 RPC messages in the '
                      'last 60 s; the last: x: last one', lines[1])
        # Each receiver counts its own.
        other = signing.Verifier(None, self.conf, signing.AGENT_ROLE,
                                 'cyborg-agent', 'cmp-1')
        other.log_refusal(signing.Refused('replayed message'), 'y')
        self.assertEqual(3, len(self.logs.output.splitlines()))


class _Conductor:

    target = messaging.Target(version='1.6')

    def __init__(self):
        self.calls = []

    @signing.host_method('hostname')
    def agent_heartbeat(self, context, hostname):
        self.calls.append(('agent_heartbeat', hostname))

    @signing.host_method('hello', 'hostname')
    def agent_hello(self, context, hello):
        self.calls.append(('agent_hello', hello.hostname))
        return True

    @signing.host_method('hostname')
    def report_data(self, context, hostname, **_kwargs):
        self.calls.append(('report_data', hostname))
        return 'ok'

    def arq_delete(self, context, **kwargs):
        self.calls.append(('arq_delete', kwargs))


class _Agent:

    target = messaging.Target(version='1.4')

    def __init__(self):
        self.calls = []

    def get_hardware(self, context):
        self.calls.append('get_hardware')
        return []


class OverTheBusTest(base.TestCase):
    """A conductor and an agent served on the in-process transport."""

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(cyborg_fixtures.Messaging(
            self, self.conf, 'fake'))
        self.conductor = _Conductor()
        cyborg_fixtures.start_rpc_service(self, self.conductor,
                                          rpc.CONDUCTOR_TOPIC, 'ctl-1')
        self.agent = _Agent()
        cyborg_fixtures.start_rpc_service(self, self.agent, rpc.AGENT_TOPIC,
                                          'cmp-1')
        self.ctx = context.get_admin_context()
        self.api = conductor_rpcapi.ConductorAPI()
        self.logs = self.useFixture(fixtures.FakeLogger(
            name='cyborg.security'))

    def test_an_agent_reports_as_itself_and_the_api_as_the_api(self):
        self.assertEqual('ok', self.api.report_data(self.ctx, 'cmp-1', [],
                                                    'h', report_seq=1))
        self.api.arq_delete(self.ctx, arq_uuids=['a'])
        self.assertEqual('report_data', self.conductor.calls[0][0])
        self.assertEqual('arq_delete', self.conductor.calls[1][0])
        self.assertEqual([], agent_rpcapi.AgentAPI().get_hardware(
            self.ctx, 'cmp-1'))

    def test_a_host_for_another_or_for_the_api_is_refused_and_logged(self):
        client = self.api.client.prepare(version='1.6')
        with signing.sending_as('host:cmp-1'):
            self.assertRaises(exception.RPCRefused, client.call, self.ctx,
                              'report_data', hostname='cmp-2', devices=[],
                              report_hash='h')
            error = self.assertRaises(exception.RPCRefused, client.call,
                                      self.ctx, 'arq_delete', arq_uuids=['a'])
        self.assertEqual([], self.conductor.calls)
        self.assertIn('SECURITY: conductor refused RPC report_data: '
                      'report_data about host cmp-2 (claimed sender '
                      'host:cmp-2, proven sender host:cmp-1)',
                      self.logs.output)
        # The caller is told why; the log has the first refusal of the
        # minute in full, the others in its next summary.
        self.assertIn('arq_delete is for the API only', str(error))
        self.assertNotIn('arq_delete', self.logs.output)

    def test_the_agent_refuses_a_host_or_the_api(self):
        client = agent_rpcapi.AgentAPI().client.prepare(server='cmp-1')
        for sender in ('host:cmp-1', keys.API):
            with signing.sending_as(sender):
                self.assertRaises(exception.RPCRefused, client.call,
                                  self.ctx, 'get_hardware')
        self.assertEqual([], self.agent.calls)

    def test_upgrade_unsigned_peers_are_taken_and_logged_then_refused(self):
        self.flags(require_signed=False, group='security')
        # An API of the release before: it has no key.
        self.messaging.keys.create_missing = False
        self.assertFalse(os.path.exists(os.path.join(
            self.messaging.key_dir, 'api.key')))
        self.api.arq_delete(self.ctx, arq_uuids=['a'])
        self.assertEqual(1, len(self.conductor.calls))
        self.assertIn('Accepting unsigned RPC messages (first: arq_delete',
                      self.logs.output)
        self.flags(require_signed=True, group='security')
        self.assertRaises(exception.RPCKeyMissing, self.api.arq_delete,
                          self.ctx, arq_uuids=['a'])


class KeysCommandTest(base.TestCase):

    def output(self, argv):
        """(exit status, stdout lines) of ``cyborg-status argv``."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                code = status.main(argv)
            except SystemExit as e:
                code = e.code
        return code, out.getvalue().splitlines()

    def test_create_then_broker_commands(self):
        key_dir = os.path.join(self.useFixture(fixtures.TempDir()).path, 'k')
        out = self.useFixture(fixtures.StringStream('stdout'))
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out.stream))
        self.assertEqual(0, status.main(['keys', 'create', '--api', '--host',
                                         'cmp-1', '--key-dir', key_dir]))
        self.assertEqual(['api.key', 'host.cmp-1.key'],
                         sorted(os.listdir(key_dir)))
        self.assertEqual(1, status.main(['keys', 'create', '--host', '../x',
                                         '--key-dir', key_dir]))
        self.assertEqual(2, status.main(['keys', 'create', '--key-dir',
                                         key_dir]))

    def test_help_lists_every_command(self):
        code, lines = self.output(['--help'])
        self.assertEqual(0, code)
        text = ' '.join(' '.join(lines).split())
        self.assertIn('{upgrade,keys}', text)
        self.assertIn('"upgrade check"', text)
        self.assertIn('"keys create", "keys rotate", "keys retire"', text)
        self.assertIn('"keys broker"', text)

    def test_config_file_before_or_after_keys_and_said(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        key_dir = os.path.join(tmp, 'k')
        config = os.path.join(tmp, 'cyborg.conf')
        with open(config, 'w') as f:
            f.write('[security]\nkey_dir = %s\n' % key_dir)
        said = 'key directory %s ([security] key_dir in %s)' % (key_dir,
                                                                config)
        self.assertEqual(
            (0, [said, 'created %s/host.cmp-1.key' % key_dir]),
            self.output(['keys', 'create', '--host', 'cmp-1',
                         '--config-file', config]))
        self.assertEqual(
            (0, [said, 'created %s/api.key' % key_dir,
                 'kept %s/host.cmp-1.key' % key_dir]),
            self.output(['--config-file', config, 'keys', 'create',
                         '--api', '--host', 'cmp-1']))
        self.assertEqual(
            (0, [said, 'rotated %s/api.key' % key_dir]),
            self.output(['keys', 'rotate', '--config-file=%s' % config,
                         '--api']))
        self.assertEqual(
            (0, [said, 'retired %s/api.key' % key_dir]),
            self.output(['--config-dir', tmp, 'keys', 'retire', '--api']))
        other = os.path.join(tmp, 'other')
        self.assertEqual(
            (0, ['key directory %s (--key-dir)' % other,
                 'created %s/api.key' % other]),
            self.output(['keys', 'create', '--api', '--config-file', config,
                         '--key-dir', other]))

    def test_the_default_key_dir_is_said_to_be_one(self):
        args = types.SimpleNamespace(key_dir=None)
        self.assertEqual(
            ('/etc/cyborg/keys', 'the default [security] key_dir: no '
             'configuration file was read; give --config-file'),
            keys_cmd.key_dir_origin(self.conf, args))
        config = os.path.join(self.useFixture(fixtures.TempDir()).path,
                              'cyborg.conf')
        with open(config, 'w') as f:
            f.write('[DEFAULT]\n')
        self.conf(['--config-file', config], project='cyborg')
        self.assertEqual(
            ('/etc/cyborg/keys', 'the default [security] key_dir: the '
             'configuration read, %s, does not set it' % config),
            keys_cmd.key_dir_origin(self.conf, args))

    def test_a_host_user_reads_and_configures_only_its_own_names(self):
        configure, write, read, topic_write, topic_read = (
            broker.permissions('agent', 'cmp-1'))
        for name in ('cyborg-agent.cmp-1', 'reply_host.cmp-1.0a1b'):
            self.assertTrue(re.match(read, name), name)
            self.assertTrue(re.match(configure, name), name)
        # Shared names are the conductors': read (to bind its queue to
        # the exchange), never configured (declared or deleted).
        self.assertTrue(re.match(read, 'cyborg'))
        for name in ('cyborg', 'cyborg-agent', 'cyborg-agent_fanout',
                     'cyborg-agent_fanout_0a1b', 'cyborg-heartbeat.2',
                     'amq.default'):
            self.assertIsNone(re.match(configure, name), name)
        for name in ('cyborg-agent.cmp-2', 'cyborg-agent.cmp-1x',
                     'cyborg-conductor', 'cyborg-conductor.ctl-1',
                     'reply_0a1b', 'reply_api.0a1b', 'reply_conductor.0a1b',
                     'reply_host.cmp-2.0a1b', 'reply_host.cmp-1x.0a1b',
                     'reply_host.cmp-1.0a1b.x', 'cyborg-agent',
                     'cyborg-agent_fanout_0a1b'):
            self.assertIsNone(re.match(read, name), name)
            self.assertIsNone(re.match(configure, name), name)
        self.assertTrue(re.match(write, 'amq.default'))
        self.assertTrue(re.match(topic_write, 'cyborg-conductor'))
        self.assertTrue(re.match(topic_write, 'cyborg-heartbeat'))
        self.assertIsNone(re.match(topic_write, 'cyborg-agent.cmp-2'))
        self.assertTrue(re.match(topic_read, 'cyborg-agent.cmp-1'))
        self.assertIsNone(re.match(topic_read, 'cyborg-agent'))

    def test_the_api_user_configures_only_its_reply_queues(self):
        configure, write, read, topic_write, _ = broker.permissions('api')
        self.assertTrue(re.match(configure, 'reply_api.0a1b'))
        for name in ('cyborg', 'reply_conductor.0a1b',
                     'reply_host.api.0a1b', 'cyborg-conductor'):
            self.assertIsNone(re.match(configure, name), name)
            self.assertIsNone(re.match(read, name), name)
        self.assertEqual('^cyborg$', write)
        self.assertEqual('^cyborg-conductor$', topic_write)

    def test_the_conductors_user_comes_with_the_queue_bounds(self):
        [permissions, bounds] = broker.commands(
            'cyborg-conductor', 'conductor', vhost='v')
        self.assertEqual('set_permissions', permissions[0])
        self.assertEqual(['set_policy', '-p', 'v', '--apply-to', 'queues',
                          'cyborg-rpc-bounds'], bounds[:6])
        for name in ('cyborg-conductor', 'cyborg-conductor.ctl-1',
                     'cyborg-agent.cmp-1'):
            self.assertTrue(re.match(bounds[6], name), name)
        for name in ('cyborg-heartbeat.2', 'reply_api.0a', 'cyborg-agent'):
            self.assertIsNone(re.match(bounds[6], name), name)
        self.assertEqual('reject-publish', json.loads(bounds[7])['overflow'])

    def test_user_names_cannot_be_another_service_or_role(self):
        self.assertEqual('cyborg-agent.nova',
                         broker.user_name('agent', 'nova'))
        self.assertEqual('cyborg-agent.api', broker.user_name('agent', 'api'))
        self.assertEqual('cyborg-api', broker.user_name('api'))
        self.assertEqual('r1-cyborg-conductor',
                         broker.user_name('conductor', prefix='r1-'))
        self.assertRaises(exception.Invalid, broker.user_name, 'agent',
                          'a b')

    def test_broker_commands_name_the_vhost_of_transport_url(self):
        out = self.useFixture(fixtures.StringStream('stdout'))
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out.stream))
        config = os.path.join(self.useFixture(fixtures.TempDir()).path,
                              'cyborg.conf')
        with open(config, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = '
                    'rabbit://u:p@127.0.0.1:5672/cyborg-vh\n')
        self.assertEqual(0, status.main([
            'keys', 'broker', '--api', '--host', 'cmp-1',
            '--config-file', config]))
        out.stream.flush()
        lines = out.getDetails()['stdout'].as_text().splitlines()
        self.assertEqual('rabbitmqctl add_vhost cyborg-vh', lines[0])
        self.assertIn('rabbitmqctl add_user cyborg-agent.cmp-1 <password>',
                      lines)
        permissions = [line for line in lines if ' set_' in line]
        self.assertEqual(4, len(permissions))
        for line in permissions:
            self.assertIn(' -p cyborg-vh ', line)


class _TwoKeys(base.TestCase):
    """The API's key and cmp-1's, in a key directory of the test's."""

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.store = keys.KeyStore(self.dir)
        for identity in (keys.API, 'host:cmp-1'):
            keys.create(self.dir, identity)


class ReplyTest(_TwoKeys):
    """A reply is bound to its request and signed with its sender's key;
    a caller takes no unsigned success; no token goes on the wire."""

    def test_a_reply_verifies_for_its_request_and_key_only(self):
        api = self.store.keys(keys.API)
        reply = signing.sign_reply(api, 'n1', {'state': 'Bound'})
        self.assertEqual({'state': 'Bound'},
                         signing.open_reply(api, 'n1', reply))
        # Another request's, another key's, or changed: refused.
        self.assertRaises(signing.Refused, signing.open_reply, api, 'n2',
                          reply)
        self.assertRaises(signing.Refused, signing.open_reply,
                          self.store.keys('host:cmp-1'), 'n1', reply)
        forged = {signing.REPLY: dict(reply[signing.REPLY],
                                      data='{"state": "BindFailed"}')}
        self.assertRaises(signing.Refused, signing.open_reply, api, 'n1',
                          forged)
        for bad in ({signing.REPLY: None}, {signing.REPLY: {'data': 1}},
                    {signing.REPLY: {'data': '1', 'macs': 'x'}}, 'x', None):
            self.assertRaises(signing.Refused, signing.open_reply, api,
                              'n1', bad)

    def test_the_request_for_a_signed_reply_is_signed(self):
        key_list = self.store.keys(keys.API)
        ctxt = signing.sign(key_list, keys.API, signing.target_of(TOPIC),
                            CTXT, MESSAGE)
        self.assertTrue(signing.wants_signed_reply(ctxt))
        verifier = signing.Verifier(self.store, self.conf,
                                    signing.CONDUCTOR_ROLE, TOPIC, None)
        auth = dict(ctxt[signing.AUTH])
        del auth[signing.REPLY]
        # Taken away, the signature no longer verifies ...
        self.assertRaises(signing.Refused, verifier.verify,
                          dict(ctxt, **{signing.AUTH: auth}), MESSAGE)
        # ... and a signature made without it (a sender of the release
        # before) verifies as it did.
        old = signing.sign(key_list, keys.API, signing.target_of(TOPIC),
                           CTXT, MESSAGE)
        del old[signing.AUTH][signing.REPLY]
        old[signing.AUTH]['macs'] = signing._macs(key_list, signing._digest(
            signing._body(old[signing.AUTH], signing.target_of(TOPIC),
                          CTXT, MESSAGE)))
        self.assertEqual(keys.API, verifier.verify(old, MESSAGE)[0])
        self.assertFalse(signing.wants_signed_reply(old))

    def test_a_cast_asks_for_no_signed_reply(self):
        key_list = self.store.keys(keys.API)
        ctxt = signing.sign(key_list, keys.API, signing.target_of(TOPIC),
                            CTXT, MESSAGE, reply=False)
        self.assertFalse(signing.wants_signed_reply(ctxt))
        verifier = signing.Verifier(self.store, self.conf,
                                    signing.CONDUCTOR_ROLE, TOPIC, None)
        self.assertEqual(keys.API, verifier.verify(ctxt, MESSAGE)[0])

    def test_no_token_goes_on_the_wire(self):
        ctx = context.RequestContext(
            auth_token='gAAAAA-secret', user_id='u', project_id='p',
            roles=['admin'], is_admin=True, request_id='req-1')
        wire = rpc.RequestContextSerializer().serialize_context(ctx)
        self.assertNotIn('gAAAAA-secret', repr(wire))
        self.assertEqual(set(), set(wire) - rpc.WIRE_CONTEXT)
        back = rpc.RequestContextSerializer().deserialize_context(wire)
        self.assertEqual(('u', 'p', ['admin'], True, 'req-1'),
                         (back.user_id, back.project_id, back.roles,
                          back.is_admin, back.request_id))
        self.assertIsNone(back.auth_token)


class _Rogue:
    """Answers on the conductor's topic without signing its replies (a
    host that took the conductor's place on the bus, or a conductor of
    the release before)."""

    target = messaging.Target(version='1.6')

    def arq_delete(self, context, **kwargs):
        return 'forged'


class UnsignedReplyTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(cyborg_fixtures.Messaging(
            self, self.conf, 'fake'))
        target = messaging.Target(
            topic=rpc.topic(self.conf, rpc.CONDUCTOR_TOPIC), server='ctl-1')
        server = messaging.get_rpc_server(
            rpc._TRANSPORT, target, [_Rogue()])
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        self.logs = self.useFixture(fixtures.FakeLogger(
            name='cyborg.security'))
        self.ctx = context.get_admin_context()

    def call(self):
        client = rpc.get_topic_client(rpc.CONDUCTOR_TOPIC, '1.6')
        return client.prepare(timeout=10).call(self.ctx, 'arq_delete',
                                                arq_uuids=['a'])

    def test_an_unsigned_success_is_refused(self):
        error = self.assertRaises(exception.RPCRefused, self.call)
        self.assertIn('an unsigned reply to arq_delete', str(error))
        self.assertIn('SECURITY: caller refused RPC arq_delete',
                      self.logs.output)

    def test_taken_during_an_upgrade(self):
        self.flags(require_signed=False, group='security')
        self.assertEqual('forged', self.call())


class _Incoming:

    client_timeout = None

    def __init__(self, ctxt, message):
        self.ctxt = ctxt
        self.message = message


class _Nonces:

    def __init__(self):
        self.taken = set()

    def claim(self, nonce, expires):
        if nonce in self.taken:
            return False
        self.taken.add(nonce)
        return True


class NonceStoreTest(_TwoKeys):
    """The conductors note in their database the nonce of every message
    that is not harmless to take again, after it is authorized."""

    def setUp(self):
        super().setUp()
        self.nonces = _Nonces()
        self.useFixture(fixtures.FakeLogger(name='cyborg.security'))
        self.conductor = _Conductor()

    def dispatcher(self):
        verifier = signing.Verifier(self.store, self.conf,
                                    signing.CONDUCTOR_ROLE, TOPIC, None,
                                    nonce_store=self.nonces)
        return rpc.SignedDispatcher([self.conductor], verifier)

    def incoming(self, sender, method, args):
        message = {'method': method, 'args': args, 'version': '1.6'}
        ctxt = signing.sign(self.store.keys(sender), sender,
                            signing.target_of(TOPIC), CTXT, message)
        return _Incoming(ctxt, message)

    def test_an_api_message_runs_once_among_conductors(self):
        message = self.incoming(keys.API, 'arq_delete', {'arq_uuids': ['a']})
        copy = _Incoming(dict(message.ctxt), dict(message.message))
        self.dispatcher().dispatch(message)
        # Another conductor (another dispatcher, another memory).
        self.assertRaises(messaging.ExpectedException,
                          self.dispatcher().dispatch, copy)
        self.assertEqual(1, len(self.conductor.calls))
        self.assertEqual(1, len(self.nonces.taken))

    def test_a_report_is_noted_in_memory_only(self):
        self.assertEqual(['report_data'], sorted(
            name for name in dir(conductor_manager.ConductorManager)
            if signing.is_replay_harmless(getattr(
                conductor_manager.ConductorManager, name))))
        signing.replays_harmless(_Conductor.report_data)
        self.addCleanup(delattr, _Conductor.report_data,
                        '_cyborg_rpc_replays_harmless')
        self.dispatcher().dispatch(self.incoming(
            'host:cmp-1', 'report_data', {'hostname': 'cmp-1'}))
        self.assertEqual([('report_data', 'cmp-1')], self.conductor.calls)
        self.assertEqual(set(), self.nonces.taken)

    def test_a_refused_message_takes_no_nonce(self):
        self.assertRaises(messaging.ExpectedException,
                          self.dispatcher().dispatch, self.incoming(
                              'host:cmp-1', 'arq_delete', {}))
        self.assertEqual(set(), self.nonces.taken)


class KeysCommandErrorsTest(base.TestCase):

    def test_a_missing_config_file_is_one_line_and_status_2(self):
        err = self.useFixture(fixtures.StringStream('stderr'))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', err.stream))
        self.assertEqual(2, status.main(['keys', 'broker', '--api',
                                         '--config-file', '/nonexistent']))
        err.stream.flush()
        [line] = err.getDetails()['stderr'].as_text().splitlines()
        self.assertIn('/nonexistent', line)
