"""The agent state file: written atomically, read back only when it is
exactly what was written."""

import json
import os

import fixtures

from cyborg.agent import reporter as agent_reporter
from cyborg.agent import state as agent_state
from cyborg.tests import base as tests_base
from cyborg.tests.unit.agent import base


class StateFileFormatTest(base.AgentTestCase):

    def setUp(self):
        super().setUp()
        self.devices = self.agent().get_hardware(None)
        self.state = agent_state.AgentState(
            host=self.HOST, report_hash=agent_reporter.report_hash(
                self.devices), devices=tuple(self.devices))

    def load(self):
        return agent_state.load(self.state_file, self.HOST,
                                agent_reporter.report_hash)

    def test_round_trip(self):
        self.assertTrue(agent_state.save(self.state_file, self.state))
        loaded = self.load()
        self.assertEqual(self.state.report_hash, loaded.trusted_hash)
        self.assertEqual(self.state.report_hash,
                         agent_reporter.report_hash(list(loaded.devices)))
        self.assertEqual(
            [tests_base.comparable(d) for d in self.devices],
            [tests_base.comparable(d) for d in loaded.devices])

    def test_unconfirmed_report_is_not_trusted(self):
        state = agent_state.AgentState(
            host=self.HOST, report_hash=self.state.report_hash,
            devices=self.state.devices, unconfirmed='f' * 64)
        agent_state.save(self.state_file, state)
        loaded = self.load()
        self.assertEqual(self.state.report_hash, loaded.report_hash)
        self.assertIsNone(loaded.trusted_hash)

    def test_no_file_is_a_fresh_start(self):
        self.assertIsNone(self.load())
        self.assertEqual('', self.logs.output)

    def test_save_replaces_the_file_in_one_step(self):
        agent_state.save(self.state_file, self.state)
        inode = os.stat(self.state_file).st_ino
        empty = agent_state.AgentState(host=self.HOST,
                                       report_hash=agent_reporter.report_hash(
                                           []))
        agent_state.save(self.state_file, empty)
        # A new file renamed over the old one: a reader sees either.
        self.assertNotEqual(inode, os.stat(self.state_file).st_ino)
        self.assertEqual((), self.load().devices)
        self.assertEqual(['agent-state.json'], os.listdir(self.state_dir))

    def test_failed_write_keeps_the_old_file(self):
        agent_state.save(self.state_file, self.state)
        before = open(self.state_file).read()
        # The temporary file cannot be renamed over a directory.
        directory = os.path.join(self.state_dir, 'dir')
        os.mkdir(directory)
        self.assertFalse(agent_state.save(directory, self.state))
        self.assertEqual(before, open(self.state_file).read())
        self.assertEqual(['agent-state.json', 'dir'],
                         sorted(os.listdir(self.state_dir)))
        self.assertIn('Cannot write the agent state file', self.logs.output)

    def test_broken_files(self):
        agent_state.save(self.state_file, self.state)
        good = json.loads(open(self.state_file).read())
        cases = {
            'not JSON': '{"format": 1, "host"',
            'not a format 1 agent state': json.dumps(dict(good, format=2)),
            'devices is not a list': json.dumps(dict(good, devices={})),
            'devices cannot be read back': json.dumps(dict(
                good, devices=[{'versioned_object.name': 'Nothing'}])),
            'do not match its report hash': json.dumps(dict(
                good, devices=good['devices'][:1])),
            'report_hash is 7, not a string': json.dumps(dict(
                good, report_hash=7)),
        }
        for reason, text in cases.items():
            with open(self.state_file, 'w') as f:
                f.write(text)
            self.assertIsNone(self.load(), reason)
            self.assertIn(reason, self.logs.output)

    def test_unreadable_file(self):
        with open(self.state_file, 'wb') as f:
            f.write(b'\xff\xfe garbage')
        self.assertIsNone(self.load())
        self.assertIn('Cannot read the agent state file', self.logs.output)

    def test_default_path_is_under_state_path(self):
        self.assertEqual(self.state_file, self.conf.agent.state_file)
        other = self.useFixture(fixtures.TempDir()).path
        self.flags(state_path=other)
        self.assertEqual(os.path.join(other, 'agent-state.json'),
                         self.conf.agent.state_file)
