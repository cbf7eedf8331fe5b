"""A database filled at scale in seconds: hosts, devices, deployables,
attach handles, hardware rows and ARQs written by bulk INSERTs (one
statement per table and chunk) through cyborg's writer, for list tests
and ``tools/bench/lists``.

Each host has ``DEVICES_PER_HOST`` devices of ``PER_DEVICE`` deployables,
each deployable one attach handle and one hardware row (a PCI function);
the rows of a host share their ``created_at`` (one report writes them in
one transaction), so sorting by it needs the ``id`` tie-breaker. Half of
the ARQs are bound to a handle of their own, the others are new.
"""

import datetime
import math

from oslo_serialization import jsonutils

from cyborg.common import states
from cyborg.db import api as db_api
from cyborg.db import models

DEVICES_PER_HOST = 4
PER_DEVICE = 4
CHUNK = 5000
PROFILE = 'bulk-fpga'
PROJECT = 'b8d3f5ae4b204c1c9a3f1e0d7c6b5a49'
START = datetime.datetime(2026, 1, 1)


def _uuid(kind, index):
    """A fixed, valid uuid per kind and index: fills are repeatable."""
    return '%08x-0000-4000-8000-%012x' % (kind, index)


def _insert(connection, model, rows):
    for start in range(0, len(rows), CHUNK):
        connection.execute(model.__table__.insert(),
                           rows[start:start + CHUNK])


def _hosts(count):
    return [{'id': i, 'hostname': 'bulk-%05d' % i, 'status': 'up',
             'endpoint': 'bulk-%05d' % i, 'version': '1',
             'last_seen_at': START, 'report_generation': 1,
             'created_at': START + datetime.timedelta(seconds=i)}
            for i in range(1, count + 1)]


def _devices(hosts):
    rows, cpids = [], []
    for host in hosts:
        for n in range(DEVICES_PER_HOST):
            i = (host['id'] - 1) * DEVICES_PER_HOST + n + 1
            rows.append({'id': i, 'uuid': _uuid(1, i), 'type': 'FPGA',
                         'vendor': '8086', 'model': 'bulk',
                         'hostname': host['hostname'], 'status': 'enabled',
                         'created_at': host['created_at']})
            cpids.append({'id': i, 'uuid': _uuid(2, i), 'device_id': i,
                          'cpid_type': 'PCI',
                          'cpid_info': '{"bus": "%02x"}' % (n + 1),
                          'created_at': host['created_at']})
    return rows, cpids


def _deployables(devices, count, hostname_of):
    deployables, handles, hardware = [], [], []
    for device in devices:
        for n in range(PER_DEVICE):
            i = (device['id'] - 1) * PER_DEVICE + n + 1
            if i > count:
                return deployables, handles, hardware
            name = '%s_dev%d_%d' % (device['hostname'], device['id'], n)
            deployables.append({
                'id': i, 'uuid': _uuid(3, i), 'name': name,
                'num_accelerators': 1, 'device_id': device['id'],
                'rp_uuid': _uuid(4, i), 'driver_name': 'fake',
                'created_at': device['created_at']})
            address = '0000:%02x:00.%d' % (device['id'] % 256, n)
            handles.append({
                'id': i, 'uuid': _uuid(5, i), 'deployable_id': i,
                'cpid_id': device['id'], 'in_use': False,
                'attach_type': 'PCI', 'attach_info': jsonutils.dumps(
                    {'domain': '0000', 'bus': '%02x' % (device['id'] % 256),
                     'device': '00', 'function': str(n)}),
                'created_at': device['created_at']})
            hardware.append({
                'id': i, 'host_id': hostname_of[device['hostname']],
                'address': address, 'vendor_id': '8086',
                'product_id': '0b30', 'name': 'bulk FPGA',
                'kernel_driver': 'vfio-pci',
                'driver': 'fake_%d' % device['id'],
                'offered': True, 'setup_required': False,
                'reboot_required': False,
                'created_at': device['created_at']})
    return deployables, handles, hardware


def _arqs(count, handles):
    rows = []
    for i in range(1, count + 1):
        row = {'id': i, 'uuid': _uuid(6, i), 'project_id': PROJECT,
               'state': states.INITIAL, 'substate': states.INITIAL,
               'device_profile_id': 1, 'device_profile_group_id': 0,
               'nova_notified': False,
               'created_at': START + datetime.timedelta(seconds=i // 4)}
        if i % 2 == 0 and i // 2 <= len(handles):
            handle = handles[i // 2 - 1]
            handle['in_use'] = True
            row.update(state=states.BOUND, substate=states.BOUND,
                       hostname='bulk', instance_uuid=_uuid(7, i),
                       device_rp_uuid=_uuid(4, handle['deployable_id']),
                       attach_handle_id=handle['id'],
                       deployable_id=handle['deployable_id'],
                       nova_notified=True)
        rows.append(row)
    return rows


@db_api.writer
def fill(context, deployables, arqs):
    """``deployables`` deployables (with their devices, hosts, handles
    and hardware rows) and ``arqs`` ARQs of one profile, in an empty
    database; returns how many rows of each table it wrote."""
    per_host = DEVICES_PER_HOST * PER_DEVICE
    hosts = _hosts(math.ceil(deployables / per_host))
    devices, cpids = _devices(hosts)
    hostname_of = {h['hostname']: h['id'] for h in hosts}
    rows, handles, hardware = _deployables(devices, deployables, hostname_of)
    arq_rows = _arqs(arqs, handles)
    profile = {'id': 1, 'uuid': _uuid(8, 1), 'name': PROFILE,
               'created_at': START, 'profile_json': jsonutils.dumps(
                   {'groups': [{'resources:FPGA': '1'}]})}
    connection = context.session.connection()
    written = {}
    for model, table_rows in ((models.Host, hosts), (models.Device, devices),
                              (models.ControlpathID, cpids),
                              (models.Deployable, rows),
                              (models.AttachHandle, handles),
                              (models.HostHardware, hardware),
                              (models.DeviceProfile, [profile]),
                              (models.ExtendedAcceleratorRequest, arq_rows)):
        _insert(connection, model, table_rows)
        written[model.__tablename__] = len(table_rows)
    return written
