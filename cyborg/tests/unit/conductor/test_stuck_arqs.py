"""Which servers count as gone, and what Nova's answer must look like
before anything is concluded from it (cyborg.conductor.stuck_arqs,
cyborg.common.clients.nova)."""

import json
from urllib import parse

import requests

from cyborg.common.clients import nova
from cyborg.common import exception
from cyborg.conductor import stuck_arqs
from cyborg.tests import base

A, B, C, D, E = ('%08d-0000-4000-8000-000000000000' % i for i in range(5))


def answer(status, body):
    response = requests.Response()
    response.status_code = status
    response._content = (body if isinstance(body, bytes)
                         else json.dumps(body).encode())
    return response


def servers(*shown):
    return answer(200, {'servers': [{'id': uuid, 'status': status}
                                    for uuid, status in shown]})


class DecideTest(base.TestCase):

    def test_only_what_nova_does_not_list_or_lists_deleted_is_gone(self):
        shown = {B: 'ACTIVE', C: 'BUILD', D: 'DELETED', E: 'UNKNOWN'}
        gone, confirmed = stuck_arqs.decide([A, B, C, D, E], shown)
        self.assertEqual([A, D], gone)
        # Building or in a cell that does not answer: asked again later.
        self.assertEqual([B], confirmed)

    def test_every_settled_status_confirms(self):
        for status in ('ACTIVE', 'SHUTOFF', 'ERROR', 'SOFT_DELETED',
                       'SHELVED_OFFLOADED', 'PAUSED', 'VERIFY_RESIZE',
                       'REBUILD', 'MIGRATING'):
            self.assertEqual(([], [A]),
                             stuck_arqs.decide([A], {A: status}), status)

    def test_nothing_asked_nothing_decided(self):
        self.assertEqual(([], []), stuck_arqs.decide([], {}))


class ServersAnswerTest(base.TestCase):

    def test_the_request_names_each_instance_in_every_project(self):
        path = nova.servers_path([B, A])
        route, query = path.split('?')
        self.assertEqual('/servers/detail', route)
        self.assertEqual([('all_tenants', '1'), ('uuid', A), ('uuid', B)],
                         parse.parse_qsl(query))

    def test_a_list_names_what_nova_has(self):
        self.assertEqual({A: 'ACTIVE'},
                         nova.shown_servers([A, B], servers((A, 'ACTIVE'))))
        self.assertEqual({}, nova.shown_servers([A], servers()))

    def test_no_answer_is_taken_for_gone(self):
        for status in (400, 401, 403, 404, 500, 503):
            self.assertRaises(exception.NovaUnavailable, nova.shown_servers,
                              [A], answer(status, {'servers': []}))
        for body in (b'not json', {'server': []}, {'servers': [{}]},
                     {'servers': None}):
            self.assertRaises(exception.NovaUnavailable, nova.shown_servers,
                              [A], answer(200, body))

    def test_a_server_not_asked_about_means_the_filter_was_ignored(self):
        # A user without Nova's allow_all_filters gets the uuid filter
        # dropped: the list is some other servers, and says nothing.
        e = self.assertRaises(exception.NovaUnavailable, nova.shown_servers,
                              [A], servers((B, 'ACTIVE')))
        self.assertIn('uuid filter was ignored', str(e))
