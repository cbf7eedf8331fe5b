"""The ARQ reads on Nova's boot path select only the fields their callers
use (``db.accelerator_requests.SHOWN``, ``HELD``, ``BINDING``): each
column costs the driver a descriptor to parse at every statement. What
the API shows of an ARQ comes from SHOWN alone, and a view read of some
fields has those in their places and None elsewhere."""

import datetime
import json

from cyborg.api.controllers.v2 import accelerator_requests as api_arqs
from cyborg.db import accelerator_requests as db_arqs
from cyborg.tests import base

_UNREAD = object()


class _Request:
    host_url = 'http://cyborg.example'
    application_url = 'http://cyborg.example'
    script_name = ''
    environ = {}


def _values(fields):
    """A value for each of ``fields``, as a read gives it."""
    values = {'id': 7, 'uuid': 'a' * 8, 'state': 'Bound',
              'project_id': 'p', 'device_profile_name': 'dp',
              'device_profile_group_id': 1,
              'group': json.dumps({'groups': [{'a': '1'}, {'b': '2'}]}),
              'hostname': 'h', 'device_rp_uuid': 'rp', 'instance_uuid': 'i',
              'attach_handle_id': 3, 'attach_handle_uuid': 'ah',
              'attach_handle_type': 'PCI',
              'attach_handle_info': json.dumps({'bus': '0c'}),
              'deployable_id': 4, 'nova_notified': True,
              'bind_conductor': 'c',
              'bind_started_at': datetime.datetime(2026, 1, 1),
              'created_at': datetime.datetime(2026, 1, 2),
              'updated_at': datetime.datetime(2026, 1, 3),
              'agent_host': 'agent'}
    return [values[name] for name in fields]


class ARQReadsTest(base.TestCase):

    def test_each_read_selects_its_fields_only(self):
        for fields in (db_arqs.SHOWN, db_arqs.HELD, db_arqs.BINDING):
            columns = db_arqs._columns(fields)
            self.assertEqual(len(fields), len(columns))
            self.assertLess(len(columns), len(db_arqs._VIEW_COLUMNS))
            statement = db_arqs._views('instance_uuid', fields=fields)
            self.assertEqual(len(fields), len(statement.selected_columns))
        self.assertEqual(len(db_arqs.BINDING) + 9,
                         len(db_arqs._BIND_VIEWS.selected_columns))

    def test_a_read_of_some_fields_puts_them_in_their_places(self):
        fields = db_arqs.BINDING
        view = db_arqs._view(tuple(_values(fields)), fields=fields)
        self.assertEqual(7, view.id)
        self.assertEqual('Bound', view.state)
        self.assertEqual('dp', view.device_profile_name)
        # The group of the profile the ARQ is of.
        self.assertEqual({'b': '2'}, view.group)
        self.assertIsNone(view.hostname)
        self.assertIsNone(view.created_at)
        self.assertEqual({}, view.attach_handle_info)

        view = db_arqs._view(tuple(_values(db_arqs.HELD)),
                             fields=db_arqs.HELD)
        self.assertEqual({'bus': '0c'}, view.attach_handle_info)
        self.assertEqual('agent', view.agent_host)
        self.assertEqual({}, view.group)
        self.assertIsNone(view.state)

    def test_a_full_read_is_as_before(self):
        fields = db_arqs.ARQView._fields
        view = db_arqs._view(tuple(_values(fields)))
        self.assertEqual({'b': '2'}, view.group)
        self.assertEqual('agent', view.agent_host)
        self.assertEqual(datetime.datetime(2026, 1, 1), view.bind_started_at)

    def test_the_api_shows_only_what_shown_reads(self):
        shown = dict(zip(db_arqs.SHOWN, _values(db_arqs.SHOWN),
                         strict=True))
        shown['attach_handle_info'] = {'bus': '0c'}
        arq = db_arqs.ARQView(**{
            name: shown.get(name, _UNREAD)
            for name in db_arqs.ARQView._fields})
        self.patch(api_arqs.link, 'make_link',
                   lambda *args, **kwargs: {'href': 'x', 'rel': 'self'})
        body = api_arqs.view(_Request(), arq)
        self.assertNotIn(_UNREAD, body.values())
        self.assertEqual('ah', body['attach_handle_uuid'])
