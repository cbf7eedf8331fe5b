"""What counts as delivered in Nova's answer to external events
(cyborg.common.clients.nova)."""

import json

import requests

from cyborg.common.clients import nova
from cyborg.tests import base

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
