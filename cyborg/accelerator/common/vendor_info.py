"""What a vendor's kernel driver says about a card, read-only, for the
device's ``vendor_board_info``.

Every card: its subsystem ids (the board maker's) and their name in the
PCI ID database. NVIDIA GPUs bound to
``nvidia``: the ``information`` file the driver keeps for each GPU in
``/proc/driver/nvidia/gpus/<address>/`` (model, GPU UUID, VBIOS, GSP
firmware) and the GPU instances of MIG in
``/proc/driver/nvidia/capabilities/gpu<minor>/mig/``. ``proc`` is the
directory beside the sysfs root, as for :mod:`passthrough`. Nothing here
writes or runs anything; a file that is missing leaves its keys out.
"""

import json
import os

from cyborg.accelerator.common import passthrough

NVIDIA = '10de'
#: Keys of NVIDIA's ``information`` file -> keys of vendor_board_info.
NVIDIA_KEYS = {'Model': 'model', 'GPU UUID': 'gpu_uuid',
               'Video BIOS': 'vbios_version', 'GPU Firmware': 'firmware',
               'Device Minor': 'minor'}


def parse_information(text):
    """``{key: value}`` of the ``Key: value`` lines NVIDIA_KEYS names."""
    found = {}
    for line in text.splitlines():
        key, sep, value = line.partition(':')
        if sep and key.strip() in NVIDIA_KEYS and value.strip():
            found[NVIDIA_KEYS[key.strip()]] = value.strip()
    return found


def _nvidia(proc, function):
    path = os.path.join(proc, 'driver', 'nvidia', 'gpus',
                        str(function.address), 'information')
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            info = parse_information(f.read())
    except OSError:
        return {}
    minor = info.get('minor')
    if minor is not None and minor.isdigit():
        mig = os.path.join(proc, 'driver', 'nvidia', 'capabilities',
                           'gpu%s' % minor, 'mig')
        try:
            info['mig_gpu_instances'] = len([
                n for n in os.listdir(mig) if n.startswith('gi')])
        except OSError:
            pass
    return info


def board_info(reader, function, names=None):
    """JSON of what the card's vendor exposes, None if nothing; ``names``
    (a :class:`pciids.Database`) names the subsystem."""
    info = {}
    subvendor = reader.read_text(function.address, 'subsystem_vendor')
    subdevice = reader.read_text(function.address, 'subsystem_device')
    if subvendor and subdevice:
        subvendor, subdevice = subvendor[-4:].lower(), subdevice[-4:].lower()
        info['subsystem'] = '%s:%s' % (subvendor, subdevice)
        if names is not None:
            info['subsystem_name'] = names.subsystem_name(
                function.vendor, function.product, subvendor, subdevice)
    if function.vendor == NVIDIA:
        info.update(_nvidia(passthrough.proc_root(reader.root), function))
    return json.dumps(info, sort_keys=True) if info else None
