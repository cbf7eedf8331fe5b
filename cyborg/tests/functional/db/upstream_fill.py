"""Fill an upstream Cyborg database through upstream's own DB API.

Run by the adoption tests with the Python of an OpenStack Cyborg
virtualenv (never ours: it imports upstream's ``cyborg``), as

    python upstream_fill.py CONFIG_FILE [--create-schema]

where CONFIG_FILE names the database (made by upstream's
``cyborg-dbsync upgrade``). With ``--create-schema`` it first makes the
schema as upstream's ``cyborg-dbsync create_schema`` does, from upstream's
models, but with a name for the ARQ state's Enum: PostgreSQL needs one
and upstream's models give none, so neither of upstream's commands can
make its schema on PostgreSQL (its migrations stop at 6c77bd6afea5, an
Enum without a name too). The name is the one upstream's own migration
ede4e3f1a232 gave that type. Writes, through upstream's
``cyborg.db.api`` Connection, two hosts' devices as upstream's conductor
records them (control path ids, deployables with their provider uuid,
attributes, attach handles, some in use), two device profiles and one
ARQ in each state, and prints what it wrote as JSON on stdout.
"""

import json
import sys
import uuid

from cyborg.common import service
from cyborg import context
from cyborg.db import api as dbapi

PROJECT = '0c6b5a49b8d3f5ae4b204c1c9a3f1e0d'
HOSTS = ('compute-a.example.org', 'compute-b.example.org')


def _pci(bus, function=0):
    return json.dumps({'domain': '0000', 'bus': bus, 'device': '00',
                       'function': str(function)}, sort_keys=True)


def _mdev(bus, asked_type, index):
    """An MDEV handle as upstream's NVIDIA driver records it: the GPU's
    address, the vGPU type and a mark per handle."""
    return json.dumps(dict(json.loads(_pci(bus)), asked_type=asked_type,
                           vgpu_mark='%s_%d' % (asked_type, index)),
                      sort_keys=True)


# (host, type, vendor, model, bus, rc, num, traits, attach type, handles)
DEVICES = (
    (HOSTS[0], 'GPU', '10de', '1eb8', 'af', 'PGPU', 1,
     ('OWNER_CYBORG', 'CUSTOM_NVIDIA_1EB8'), 'PCI', 1),
    (HOSTS[0], 'FPGA', '8086', '09c4', '5e', 'FPGA', 2,
     ('CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_INTEL_ARRIA10'), 'PCI', 2),
    (HOSTS[1], 'GPU', '10de', '1eb8', '3b', 'VGPU', 2,
     ('OWNER_CYBORG', 'CUSTOM_NVIDIA_1EB8_T4_2B'), 'MDEV', 2),
)


def add_devices(conn, ctx):
    written = []
    for (host, dev_type, vendor, model, bus, rc, num, traits, attach_type,
         handles) in DEVICES:
        device = conn.device_create(ctx, {
            'type': dev_type, 'vendor': vendor, 'model': model,
            'std_board_info': json.dumps({'product_id': model,
                                          'controller': 'test'}),
            'vendor_board_info': '', 'hostname': host})
        cpid = conn.control_path_create(ctx, {
            'device_id': device.id, 'cpid_type': 'PCI',
            'cpid_info': _pci(bus)})
        name = '%s_0000:%s:00.0' % (host.split('.')[0], bus)
        deployable = conn.deployable_create(ctx, {
            'name': name, 'num_accelerators': num, 'device_id': device.id,
            'rp_uuid': str(uuid.uuid3(uuid.NAMESPACE_DNS, name)),
            'driver_name': 'NVIDIA' if dev_type == 'GPU' else 'INTEL'})
        attributes = [conn.attribute_create(ctx, {
            'deployable_id': deployable.id, 'key': 'rc', 'value': rc})]
        attributes += [conn.attribute_create(ctx, {
            'deployable_id': deployable.id, 'key': 'trait%d' % i,
            'value': trait}) for i, trait in enumerate(traits)]
        handle_rows = [conn.attach_handle_create(ctx, {
            'deployable_id': deployable.id, 'cpid_id': cpid.id,
            'attach_type': attach_type, 'in_use': False,
            'attach_info': _pci(bus, i) if attach_type == 'PCI' else
            _mdev(bus, 'nvidia-2b', i)}) for i in range(handles)]
        written.append({
            'uuid': device.uuid, 'hostname': host, 'type': dev_type,
            'vendor': vendor, 'model': model,
            'std_board_info': device.std_board_info,
            'vendor_board_info': device.vendor_board_info,
            'attach_type': attach_type,
            'attach_infos': [h.attach_info for h in handle_rows],
            'cpid': cpid.uuid, 'cpid_info': cpid.cpid_info,
            'deployable': {'uuid': deployable.uuid, 'id': deployable.id,
                           'name': name, 'rp_uuid': deployable.rp_uuid,
                           'num_accelerators': num, 'rc': rc,
                           'driver_name': deployable.driver_name,
                           'traits': list(traits)},
            'attributes': {a.key: [a.uuid, a.value] for a in attributes},
            'handles': [[h.id, h.uuid] for h in handle_rows]})
    return written


def add_profiles(conn, ctx):
    profiles = {}
    for name, description, groups in (
            ('gpu-dp', 'one T4', [{'resources:PGPU': '1',
                                   'trait:CUSTOM_NVIDIA_1EB8': 'required'}]),
            ('fpga-dp', None, [{'resources:FPGA': '1',
                                'trait:CUSTOM_FPGA_INTEL': 'required'}])):
        row = conn.device_profile_create(ctx, {
            'name': name, 'description': description,
            'profile_json': json.dumps({'groups': groups})})
        profiles[name] = {'uuid': row.uuid, 'id': row.id,
                          'description': description, 'groups': groups}
    return profiles


def add_arqs(conn, ctx, devices, profiles):
    """One ARQ per state, bound ones on the handles of the FPGA (in use
    from then on); the Initial one without a project, as before 2026."""
    fpga = devices[1]
    arqs = []
    for index, state in enumerate(('Initial', 'BindStarted', 'Bound',
                                   'BindFailed', 'Unbound', 'Deleting')):
        values = {'state': state, 'device_profile_id':
                  profiles['fpga-dp']['id'], 'device_profile_group_id': 0,
                  'project_id': None if state == 'Initial' else PROJECT}
        if state != 'Initial':
            values.update(hostname=fpga['hostname'].split('.')[0],
                          device_rp_uuid=fpga['deployable']['rp_uuid'],
                          instance_uuid=str(uuid.uuid4()))
        if state in ('BindStarted', 'Bound'):
            handle_id = fpga['handles'][index - 1][0]
            values.update(attach_handle_id=handle_id,
                          deployable_id=fpga['deployable']['id'])
            conn.attach_handle_update(ctx, fpga['handles'][index - 1][1],
                                      {'in_use': True})
        row = conn.extarq_create(ctx, values)
        arqs.append({'uuid': row.uuid, 'state': state,
                     'project_id': values['project_id'],
                     'hostname': values.get('hostname'),
                     'device_rp_uuid': values.get('device_rp_uuid'),
                     'instance_uuid': values.get('instance_uuid'),
                     'attach_handle_id': values.get('attach_handle_id')})
    return arqs


def create_schema():
    from cyborg.db.sqlalchemy import migration
    from cyborg.db.sqlalchemy import models

    state = models.ExtArq.__table__.c.state.type
    state.name = state.name or 'state'
    migration.create_schema()


def main(config_file, *options):
    service.prepare_service(['upstream_fill', '--config-file', config_file])
    if '--create-schema' in options:
        create_schema()
    conn = dbapi.get_instance()
    ctx = context.get_admin_context()
    devices = add_devices(conn, ctx)
    profiles = add_profiles(conn, ctx)
    arqs = add_arqs(conn, ctx, devices, profiles)
    print(json.dumps({'devices': devices, 'profiles': profiles,
                      'arqs': arqs}))


if __name__ == '__main__':
    main(*sys.argv[1:])
