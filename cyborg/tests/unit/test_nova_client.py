"""What counts as delivered in Nova's answer to external events
(cyborg.common.clients.nova)."""

import json
import types

import fixtures
import requests

from cyborg.common.clients import nova
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures

EVENTS = (nova.events('i-1', {'a': 'completed', 'b': 'failed'})
          + nova.events('i-2', {'c': 'completed'}))


def answer(status, body=None):
    response = requests.Response()
    response.status_code = status
    response._content = json.dumps(body or {}).encode()
    return response


class DeliveredTest(base.TestCase):

    def test_whole_answers(self):
        self.assertEqual({'a', 'b', 'c'},
                         nova.delivered_tags(answer(200), EVENTS))
        # None of the instances exists: nothing to send again.
        self.assertEqual({'a', 'b', 'c'},
                         nova.delivered_tags(answer(404), EVENTS))
        for status in (400, 401, 403, 500, 503):
            self.assertEqual(set(), nova.delivered_tags(answer(status),
                                                        EVENTS))

    def test_each_event_of_a_multi_status_answer(self):
        codes = {'a': 200, 'b': 400, 'c': 422}
        body = {'events': [dict(e, code=codes[e['tag']]) for e in EVENTS]}
        # 422 (not on a host yet) and 404 (gone) cannot be helped by
        # sending again; 400 can.
        self.assertEqual({'a', 'c'},
                         nova.delivered_tags(answer(207, body), EVENTS))
        body['events'][1]['code'] = 404
        self.assertEqual({'a', 'b', 'c'},
                         nova.delivered_tags(answer(207, body), EVENTS))

    def test_a_multi_status_answer_names_only_what_was_sent(self):
        body = {'events': [{'tag': 'zzz', 'code': 200}]}
        self.assertEqual(set(), nova.delivered_tags(answer(207, body),
                                                    EVENTS))
        broken = answer(207)
        broken._content = b'not json'
        self.assertEqual(set(), nova.delivered_tags(broken, EVENTS))

    def test_events_of_one_instance(self):
        self.assertEqual(
            [{'name': nova.EVENT, 'server_uuid': 'i-1', 'tag': 'a',
              'status': 'completed'},
             {'name': nova.EVENT, 'server_uuid': 'i-1', 'tag': 'b',
              'status': 'failed'}], EVENTS[:2])


class EnvironmentTest(base.TestCase):
    """The Nova client reads the environment's HTTP settings once, as the
    Placement client does (cyborg.common.clients.environment)."""

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.NoHTTPEnvironment())
        # No auth plugin: loading one registers its options on the
        # process's configuration, where later tests register their own.
        self.useFixture(fixtures.MockPatch(
            'keystoneauth1.loading.load_auth_from_conf_options',
            return_value=None))
        # The session connect() builds; openstacksdk's proxy would look
        # for a Nova endpoint, which does not matter here.
        self.useFixture(fixtures.MockPatch(
            'openstack.connection.Connection',
            lambda session, oslo_conf: types.SimpleNamespace(
                compute=types.SimpleNamespace(session=session))))

    def test_a_ca_bundle_becomes_the_sessions_verify(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'REQUESTS_CA_BUNDLE', '/etc/ssl/certs/ca-certificates.crt'))
        session = nova.connect(self.conf).session
        self.assertEqual('/etc/ssl/certs/ca-certificates.crt',
                         session.verify)
        self.assertFalse(session.session.trust_env)

    def test_a_proxy_keeps_requests_reading_the_environment(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'https_proxy', 'http://127.0.0.1:3128'))
        session = nova.connect(self.conf).session
        self.assertTrue(session.session.trust_env)
        self.assertIs(True, session.verify)
