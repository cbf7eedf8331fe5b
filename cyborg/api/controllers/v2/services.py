"""``/v2/services`` (2.5): the acceleration services each discovered
deployable offers, with its host and status. ``?host=`` and
``?device_type=`` filter.

A service is named from what the deployable reports: QAT's
``CUSTOM_QAT_CRYPTO`` / ``CUSTOM_QAT_COMPRESSION`` traits give
``crypto`` / ``compression``; an FPGA's loaded function gives
``fpga-function:<function id>`` (or ``fpga-bitstream:<image>``); a vGPU
type gives ``vgpu:<trait suffix>``; anything else its resource class in
lower case (``pgpu``, ``fpga``, ``custom_nic``...). The status is
``down`` when the host is down, ``disabled`` when the device is, else
``up``.
"""

import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers.v2 import _ops
from cyborg.api.schemas import services as schema
from cyborg.api import validation
from cyborg.db import deployables as db_deployables
from cyborg import policies

_TRAIT_SERVICES = {'CUSTOM_QAT_CRYPTO': 'crypto',
                   'CUSTOM_QAT_COMPRESSION': 'compression'}
_FUNCTION_PREFIX = 'CUSTOM_FPGA_FUNCTION_ID_'
_VGPU_PREFIX = 'CUSTOM_NVIDIA_'


def services_of(row, attributes):
    """The service names of one deployable."""
    values = dict(attributes)
    rc = values.get('rc') or ''
    traits = [value for key, value in attributes if key.startswith('trait')]
    names = [_TRAIT_SERVICES[t] for t in traits if t in _TRAIT_SERVICES]
    names += ['fpga-function:%s' % t[len(_FUNCTION_PREFIX):].lower()
              for t in traits if t.startswith(_FUNCTION_PREFIX)]
    if rc == 'VGPU':
        names += ['vgpu:%s' % t[len(_VGPU_PREFIX):].lower()
                  for t in traits if t.startswith(_VGPU_PREFIX)]
    if row.bitstream_id and not any(n.startswith('fpga-function:')
                                    for n in names):
        names.append('fpga-bitstream:%s' % row.bitstream_id)
    return sorted(set(names)) or [rc.lower() or row.device_type.lower()]


def status_of(row):
    if row.host_status == 'down':
        return 'down'
    if row.device_status != 'enabled':
        return 'disabled'
    return 'up'


def service_view(row, service):
    """One row of the service list: ``service`` of deployable ``row``."""
    return {'host': row.hostname, 'device_uuid': row.device_uuid,
            'deployable_uuid': row.uuid, 'deployable_name': row.name,
            'device_type': row.device_type, 'driver_name': row.driver_name,
            'service': service, 'status': status_of(row)}


class ServicesController:

    min_version = _ops.VERSION

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        request = pecan.request
        context = common.authorize(policies.SERVICE_GET_ALL)
        query = validation.query(request, schema.LIST_QUERY)
        rows, attributes = db_deployables.services(
            context, query.get('host') or None,
            query.get('device_type') or None)
        return {'services': [
            service_view(row, service) for row in rows
            for service in services_of(row, attributes[row.id])]}
