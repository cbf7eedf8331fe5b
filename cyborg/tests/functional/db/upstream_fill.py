"""Fill an upstream Cyborg database through upstream's own code.

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
ede4e3f1a232 gave that type.

The rows are written the way upstream writes them in a running cloud:

- two hosts' devices (a GPU, an FPGA with two handles, a vGPU GPU) by
  upstream's conductor, ``ConductorManager.report_data``, from the driver
  objects its agent sends (control path ids, deployables with their
  provider uuid, attributes, attach handles); its Placement client
  answers without a Placement (``_Placement``): Placement is not what
  is adopted;
- two device profiles by its conductor's ``device_profile_create``, as
  its API calls it;
- one ARQ in each state by its conductor's ``arq_create`` and its
  ExtARQ objects' own bind (``start_bind_job``), ``unbind`` and state
  changes: Initial (without a project, as before upstream filled it),
  BindStarted (a bind stopped half-way), Bound, Unbound, Deleting and
  BindFailed (no free handle left).

It prints what upstream wrote, read back from the tables, as JSON.
"""

import json
import sys
import uuid

from oslo_config import cfg
import sqlalchemy as sa

from cyborg.common import service
from cyborg import context

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


class _Placement:
    """Upstream's conductor's Placement client, answering without a
    Placement: the compute node of each host has a uuid of its name,
    every provider is created with the uuid asked for, every other call
    succeeds. Upstream's conductor writes the rows as with a real one."""

    def __init__(self, *args, **kwargs):
        pass

    def get(self, url):
        name = url.split('name=', 1)[1]
        roots = {'resource_providers': [
            {'uuid': str(uuid.uuid5(uuid.NAMESPACE_DNS, name))}]}

        class _Response:
            @staticmethod
            def json():
                return roots
        return _Response()

    def ensure_resource_provider(self, context, rp_uuid, **kwargs):
        return rp_uuid

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def _driver_device(dev_type, vendor, model, bus, rc, num, traits,
                   attach_type, handles, name):
    """What upstream's agent sends its conductor for one device."""
    from cyborg.objects.driver_objects import driver_attach_handle
    from cyborg.objects.driver_objects import driver_attribute
    from cyborg.objects.driver_objects import driver_controlpath_id
    from cyborg.objects.driver_objects import driver_deployable
    from cyborg.objects.driver_objects import driver_device

    attributes = [driver_attribute.DriverAttribute(key='rc', value=rc)]
    attributes += [driver_attribute.DriverAttribute(
        key='trait%d' % i, value=trait) for i, trait in enumerate(traits)]
    deployable = driver_deployable.DriverDeployable(
        name=name, num_accelerators=num, attribute_list=attributes,
        driver_name='NVIDIA' if dev_type == 'GPU' else 'INTEL',
        attach_handle_list=[driver_attach_handle.DriverAttachHandle(
            attach_type=attach_type, in_use=False,
            attach_info=_pci(bus, i) if attach_type == 'PCI' else
            _mdev(bus, 'nvidia-2b', i)) for i in range(handles)])
    return driver_device.DriverDevice(
        type=dev_type, vendor=vendor, model=model,
        std_board_info=json.dumps({'product_id': model,
                                   'controller': 'test'}),
        vendor_board_info='', stub=False,
        controlpath_id=driver_controlpath_id.DriverControlPathID(
            cpid_type='PCI', cpid_info=_pci(bus)),
        deployable_list=[deployable])


def _rows(engine, table, **where):
    meta = sa.MetaData()
    table = sa.Table(table, meta, autoload_with=engine)
    query = sa.select(table).order_by(table.c.id)
    for key, value in where.items():
        query = query.where(table.c[key] == value)
    with engine.connect() as connection:
        return [row._asdict() for row in connection.execute(query)]


def add_devices(engine, ctx):
    """Each host's devices as upstream's agent reports them, through
    upstream's conductor (``report_data``); then what it wrote."""
    from cyborg.common import placement_client
    from cyborg.conductor import manager

    placement_client.PlacementClient = _Placement
    conductor = manager.ConductorManager('cyborg-conductor', 'fill')
    names = {}
    for host in HOSTS:
        reported = []
        for (dev_host, dev_type, vendor, model, bus, rc, num, traits,
             attach_type, handles) in DEVICES:
            if dev_host != host:
                continue
            name = '%s_0000:%s:00.0' % (host.split('.')[0], bus)
            names[name] = (traits, attach_type)
            reported.append(_driver_device(dev_type, vendor, model, bus, rc,
                                           num, traits, attach_type, handles,
                                           name))
        conductor.report_data(ctx, host, reported)
    written = []
    for device in _rows(engine, 'devices'):
        [cpid] = _rows(engine, 'controlpath_ids', device_id=device['id'])
        [deployable] = _rows(engine, 'deployables', device_id=device['id'])
        attributes = _rows(engine, 'attributes',
                           deployable_id=deployable['id'])
        handle_rows = _rows(engine, 'attach_handles',
                            deployable_id=deployable['id'])
        traits, attach_type = names[deployable['name']]
        written.append({
            'uuid': device['uuid'], 'hostname': device['hostname'],
            'type': device['type'], 'vendor': device['vendor'],
            'model': device['model'],
            'std_board_info': device['std_board_info'],
            'vendor_board_info': device['vendor_board_info'],
            'attach_type': attach_type,
            'attach_infos': [h['attach_info'] for h in handle_rows],
            'cpid': cpid['uuid'], 'cpid_info': cpid['cpid_info'],
            'deployable': {
                'uuid': deployable['uuid'], 'id': deployable['id'],
                'name': deployable['name'],
                'rp_uuid': deployable['rp_uuid'],
                'num_accelerators': deployable['num_accelerators'],
                'rc': {a['key']: a['value'] for a in attributes}['rc'],
                'driver_name': deployable['driver_name'],
                'traits': list(traits)},
            'attributes': {a['key']: [a['uuid'], a['value']]
                           for a in attributes},
            'handles': [[h['id'], h['uuid']] for h in handle_rows]})
    # In the order of DEVICES.
    order = [d[4] for d in DEVICES]
    return sorted(written, key=lambda d: order.index(
        json.loads(d['cpid_info'])['bus']))


def add_profiles(ctx):
    """Two device profiles, created as upstream's API creates them
    (its conductor's ``device_profile_create``)."""
    from cyborg.conductor import manager
    from cyborg import objects

    conductor = manager.ConductorManager('cyborg-conductor', 'fill')
    profiles = {}
    for name, description, groups in (
            ('gpu-dp', 'one T4', [{'resources:PGPU': '1',
                                   'trait:CUSTOM_NVIDIA_1EB8': 'required'}]),
            ('fpga-dp', None, [{'resources:FPGA': '1',
                                'trait:CUSTOM_FPGA_INTEL': 'required'}])):
        row = conductor.device_profile_create(ctx, objects.DeviceProfile(
            ctx, name=name, description=description, groups=groups))
        profiles[name] = {'uuid': row.uuid, 'id': row.id,
                          'description': description, 'groups': groups}
    return profiles


def add_arqs(engine, ctx, devices, profiles):
    """One ARQ in each state, created as upstream's API creates them and
    bound, unbound and failed by upstream's own ExtARQ code on the FPGA
    (two handles): Bound holds one, Deleting (bound first) the other, so
    BindFailed finds none free. The Initial one has no project, as
    before upstream filled it."""
    from cyborg.common import constants
    from cyborg.conductor import manager
    from cyborg import objects

    conductor = manager.ConductorManager('cyborg-conductor', 'fill')
    fpga = devices[1]
    arqs = []
    for state in ('Initial', 'BindStarted', 'Bound', 'Unbound', 'Deleting',
                  'BindFailed'):
        project = None if state == 'Initial' else PROJECT
        extarq = conductor.arq_create(ctx, objects.ExtARQ(ctx, arq=objects.ARQ(
            ctx, device_profile_name='fpga-dp', device_profile_group_id=0,
            project_id=project)), profiles['fpga-dp']['id'])
        if state != 'Initial':
            _bind(ctx, extarq, state, fpga, project, constants)
        arqs.append({'uuid': extarq.arq.uuid, 'state': state})
    for arq in arqs:
        [row] = _rows(engine, 'extended_accelerator_requests',
                      uuid=arq['uuid'])
        assert row['state'] == arq['state'], (row, arq)
        arq.update({key: row[key] for key in (
            'project_id', 'hostname', 'device_rp_uuid', 'instance_uuid',
            'attach_handle_id')})
    return arqs


def _bind(ctx, extarq, state, fpga, project, constants):
    """Take ``extarq`` to ``state`` through upstream's bind and unbind."""
    from cyborg import objects

    extarq = objects.ExtARQ.get_suitable_ext_arq(ctx, extarq.arq.uuid)
    fields = {extarq.arq.uuid: {
        'hostname': fpga['hostname'].split('.')[0],
        'device_rp_uuid': fpga['deployable']['rp_uuid'],
        'instance_uuid': str(uuid.uuid4()), 'project_id': project}}
    if state == 'BindStarted':
        # The bind stops where upstream's conductor died.
        extarq._bind_job = lambda *args: None
    try:
        extarq.start_bind_job(ctx, fields)
    except Exception:
        if state != 'BindFailed':
            raise
    if state == 'Unbound':
        extarq.unbind(ctx)
    elif state == 'Deleting':
        extarq.update_check_state(ctx, constants.ARQ_DELETING)


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
    engine = sa.create_engine(cfg.CONF.database.connection)
    ctx = context.get_admin_context()
    devices = add_devices(engine, ctx)
    profiles = add_profiles(ctx)
    arqs = add_arqs(engine, ctx, devices, profiles)
    engine.dispose()
    print(json.dumps({'devices': devices, 'profiles': profiles,
                      'arqs': arqs}))


if __name__ == '__main__':
    main(*sys.argv[1:])
