"""What an adoption of upstream's rows plans to write (cyborg.db.adopt.plan):
the rows it keeps as they are, those it cannot adopt and why, and what
hangs on them. The real schema and the writes are tested in
cyborg/tests/functional/db/test_adopt_upstream.py."""

import datetime
import json
import uuid

from cyborg.db import adopt
from cyborg.tests import base

NOW = datetime.datetime(2026, 11, 26, 21, 0, 0)
HEAD = 'b47c8f2d1e3a'


def _uuid(n):
    return '00000000-0000-4000-8000-%012d' % n


def _source():
    """A small upstream database: one device of one host, its deployable,
    attribute and handle, a profile and a Bound and a BindStarted ARQ."""
    name = 'compute-a_0000:af:00.0'
    started = datetime.datetime(2026, 11, 26, 20, 0, 0)
    return {
        'device_profiles': [{'id': 1, 'uuid': _uuid(1), 'name': 'dp',
                             'description': 'd', 'profile_json': json.dumps(
                                 {'groups': [{'resources:PGPU': '1'}]})}],
        'devices': [{'id': 1, 'uuid': _uuid(2), 'type': 'GPU',
                     'vendor': '10de', 'model': '1eb8', 'std_board_info': '{}',
                     'vendor_board_info': '', 'hostname': 'compute-a',
                     'status': 'enabled', 'device_state': None}],
        'controlpath_ids': [{'id': 1, 'uuid': _uuid(3), 'device_id': 1,
                             'cpid_type': 'PCI',
                             'cpid_info': '{"bus": "af"}'}],
        'deployables': [{'id': 1, 'uuid': _uuid(4), 'parent_id': None,
                         'root_id': None, 'name': name,
                         'num_accelerators': 2, 'device_id': 1,
                         'rp_uuid': str(uuid.uuid3(uuid.NAMESPACE_DNS, name)),
                         'driver_name': 'NVIDIA', 'bitstream_id': None}],
        'attributes': [{'id': 1, 'uuid': _uuid(5), 'deployable_id': 1,
                        'key': 'rc', 'value': 'PGPU'}],
        'attach_handles': [{'id': i, 'uuid': _uuid(5 + i), 'deployable_id': 1,
                            'cpid_id': 1, 'in_use': 1, 'attach_type': 'PCI',
                            'attach_info': '{"function": "%d"}' % i}
                           for i in (1, 2)],
        'extended_accelerator_requests': [
            {'id': i, 'uuid': _uuid(10 + i), 'project_id': None if i == 2
             else 'p1', 'state': state, 'device_profile_id': 1,
             'device_profile_group_id': 0, 'hostname': 'compute-a',
             'device_rp_uuid': _uuid(20), 'instance_uuid': _uuid(30 + i),
             'attach_handle_id': i, 'deployable_id': 1, 'substate': 'Initial',
             'created_at': started, 'updated_at': started}
            for i, state in ((1, 'Bound'), (2, 'BindStarted'))],
    }


def _by_uuid(the_plan, table):
    return {row['uuid']: row for row in the_plan.rows[table]}


class PlanTest(base.TestCase):

    def test_every_row_keeps_its_uuid_id_and_references(self):
        source = _source()
        the_plan = adopt.plan(HEAD, source, NOW)
        self.assertEqual([], the_plan.rejected)
        for table, rows in source.items():
            adopted = _by_uuid(the_plan, table)
            self.assertEqual({r['uuid']: r['id'] for r in rows},
                             {u: r['id'] for u, r in adopted.items()}, table)
        arq = _by_uuid(the_plan, 'extended_accelerator_requests')[_uuid(11)]
        self.assertEqual((1, 1, 'p1', True),
                         (arq['attach_handle_id'], arq['deployable_id'],
                          arq['project_id'], arq['nova_notified']))
        deployable = the_plan.rows['deployables'][0]
        self.assertEqual(source['deployables'][0]['rp_uuid'],
                         deployable['rp_uuid'])
        self.assertTrue(the_plan.rows['attach_handles'][0]['in_use'])
        self.assertEqual('17.0.0', the_plan.release)

    def test_rows_of_a_table_have_the_same_columns(self):
        # One INSERT of many rows takes its columns from the first row.
        the_plan = adopt.plan(HEAD, _source(), NOW)
        for table, rows in the_plan.rows.items():
            self.assertEqual(1, len({frozenset(row) for row in rows}), table)

    def test_device_state_is_left_behind(self):
        source = _source()
        source['devices'][0]['device_state'] = 'error'
        the_plan = adopt.plan(HEAD, source, NOW)
        self.assertNotIn('device_state', the_plan.rows['devices'][0])
        self.assertIn('device_state error', '\n'.join(the_plan.notes))

    def test_an_unfinished_bind_is_left_for_our_conductors_to_fail(self):
        the_plan = adopt.plan(HEAD, _source(), NOW)
        arq = _by_uuid(the_plan, 'extended_accelerator_requests')[_uuid(12)]
        self.assertEqual(
            (adopt.ADOPTED_CONDUCTOR, datetime.datetime(2026, 11, 26, 20),
             False, None),
            (arq['bind_conductor'], arq['bind_started_at'],
             arq['nova_notified'], arq['project_id']))
        self.assertIn('%s: no project_id' % _uuid(12),
                      '\n'.join(the_plan.notes))

    def test_one_host_row_per_device_host_synced_at_generation_zero(self):
        source = _source()
        source['devices'].append(dict(source['devices'][0], id=2,
                                      uuid=_uuid(40), hostname='compute-b'))
        hosts = adopt.plan(HEAD, source, NOW).rows['hosts']
        self.assertEqual(
            [('compute-a', 0, 0, NOW), ('compute-b', 0, 0, NOW)],
            [(h['hostname'], h['report_generation'], h['synced_generation'],
              h['last_seen_at']) for h in hosts])

    def test_an_unknown_device_type_takes_what_hangs_on_it_along(self):
        source = _source()
        source['devices'][0]['type'] = 'NVME'
        the_plan = adopt.plan(HEAD, source, NOW)
        self.assertEqual(
            [('devices', _uuid(2), 'device type NVME is unknown to cyborg'),
             ('controlpath_ids', _uuid(3), 'its device is not adopted'),
             ('deployables', _uuid(4), 'its device is not adopted'),
             ('attributes', _uuid(5), 'its deployable is not adopted')]
            + [('attach_handles', _uuid(5 + i), 'its deployable or control '
                'path id is not adopted') for i in (1, 2)]
            + [('extended_accelerator_requests', _uuid(10 + i),
                'its attach handle or deployable is not adopted')
               for i in (1, 2)],
            the_plan.rejected)
        self.assertEqual([], the_plan.rows['hosts'])
        self.assertEqual(1, the_plan.counts()['device_profiles'])

    def test_a_deployable_name_used_twice(self):
        source = _source()
        source['deployables'].append(dict(source['deployables'][0], id=2,
                                          uuid=_uuid(50)))
        the_plan = adopt.plan(HEAD, source, NOW)
        self.assertEqual([('deployables', _uuid(50), 'its name %s is the '
                           'name of deployable %s too' % (
                               source['deployables'][0]['name'], _uuid(4)))],
                         the_plan.rejected)

    def test_attributes_that_do_not_fit(self):
        source = _source()
        source['attributes'] += [
            dict(source['attributes'][0], id=2, uuid=_uuid(60)),
            dict(source['attributes'][0], id=3, uuid=_uuid(61),
                 key='trait' + 'X' * 251)]
        self.assertEqual(
            [('attributes', _uuid(60),
              'its deployable has another attribute rc'),
             ('attributes', _uuid(61),
              'its key is longer than 255 characters')],
            adopt.plan(HEAD, source, NOW).rejected)

    def test_profiles_and_arqs_that_do_not_fit(self):
        source = _source()
        source['device_profiles'][0]['profile_json'] = '{"groups": 3}'
        source['extended_accelerator_requests'][0]['state'] = 'Lost'
        self.assertEqual(
            [('device_profiles', _uuid(1),
              'profile_json has no list of groups'),
             ('extended_accelerator_requests', _uuid(11),
              'state Lost is unknown to cyborg'),
             ('extended_accelerator_requests', _uuid(12),
              'its device profile is not adopted')],
            adopt.plan(HEAD, source, NOW).rejected)

    def test_summary_lists_the_hosts(self):
        lines = adopt.plan(HEAD, _source(), NOW).summary()
        self.assertEqual('  compute-a', lines[lines.index(
            "Hosts (each one's cyborg agent must use this name, [DEFAULT] "
            'host):') + 1])

    def test_summary_lists_counts_rejections_and_notes(self):
        source = _source()
        source['devices'][0]['type'] = 'NVME'
        lines = adopt.plan(HEAD, source, NOW).summary()
        self.assertEqual('Upstream Cyborg 17.0.0 (alembic revision %s).'
                         % HEAD, lines[0])
        self.assertIn('  devices                         0', lines)
        self.assertIn('Cannot adopt: 8 row(s)', lines)
        self.assertIn('  devices %s: device type NVME is unknown to cyborg'
                      % _uuid(2), lines)
