"""What a vendor's kernel driver says about a card, read-only, for the
device's ``vendor_board_info``.

Every card a SysfsPciDriver offers: its subsystem ids (the board maker's)
and their name in the PCI ID database. Intel FPGA cards: the bitstream
id and metadata their FPGA management engine shows. NVIDIA GPUs bound to
``nvidia``: the ``information`` file the driver keeps for each GPU in
``/proc/driver/nvidia/gpus/<address>/`` (model, GPU UUID, VBIOS, GSP
firmware) and the GPU instances of MIG in
``/proc/driver/nvidia/capabilities/gpu<minor>/mig/`` (the driver's files
do not say whether MIG mode is on: the ``information`` file has no such
line, and a ``gi*`` directory exists only for a GPU instance made; the
mode is known only through NVML, which cyborg does not call, so there is
no MIG mode key). Intel QAT cards (4xxx and later): the state and the
services the ``qat/`` directory of the PF shows. ``proc`` is the
directory beside the sysfs root, as for :mod:`passthrough`. Nothing here
writes or runs anything; a file that is missing leaves its keys out.
"""

import glob
import json
import os

from cyborg.accelerator.common import hostfiles

NVIDIA = '10de'
INTEL = '8086'
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


def nvidia_model(reader, function):
    """The model the ``nvidia`` driver shows for ``function`` (None: it
    shows none, or does not drive it)."""
    return _nvidia(hostfiles.proc_root(reader.root), function).get(
        'model')


#: Identity files below an Intel FPGA function, by key: the FPGA
#: management engine's bitstream id and metadata, under the in-kernel DFL
#: driver or OPAE's older one.
INTEL_FPGA_FILES = {
    'bitstream_id': ('fpga_region/region*/dfl-fme.*/bitstream_id',
                     'fpga/intel-fpga-dev.*/intel-fpga-fme.*/bitstream_id'),
    'bitstream_metadata': (
        'fpga_region/region*/dfl-fme.*/bitstream_metadata',
        'fpga/intel-fpga-dev.*/intel-fpga-fme.*/bitstream_metadata'),
}


#: Files of an Intel QAT PF (the kernel's qat_4xxx and later): whether
#: it is up, and the services it runs (``sym;asym``, ``dc``...).
INTEL_QAT_FILES = {
    'qat_state': ('qat/state',),
    'qat_services': ('qat/cfg_services',),
}
INTEL_FILES = dict(INTEL_FPGA_FILES, **INTEL_QAT_FILES)


def _files(reader, function, table):
    found = {}
    for key, patterns in table.items():
        for pattern in patterns:
            paths = sorted(glob.glob(reader.path(function.address,
                                                 pattern)))
            text = reader.read_text(function.address, os.path.relpath(
                paths[0], reader.path(function.address))) if paths else None
            if text:
                found[key] = text
                break
    return found


def board_info(reader, function, names=None):
    """What the card's vendor exposes, as a dict; ``names`` (a
    :class:`pciids.Database`) names the subsystem."""
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
        info.update(_nvidia(hostfiles.proc_root(reader.root), function))
    elif function.vendor == INTEL:
        info.update(_files(reader, function, INTEL_FILES))
    return info


def merged(vendor_board_info, info):
    """A device's ``vendor_board_info`` (JSON or None) with the keys of
    ``info`` it does not have; text that is not a JSON object is kept as
    it is."""
    if not info:
        return vendor_board_info
    if vendor_board_info is None:
        return json.dumps(info, sort_keys=True)
    try:
        current = json.loads(vendor_board_info)
    except ValueError:
        return vendor_board_info
    if not isinstance(current, dict):
        return vendor_board_info
    return json.dumps(dict(info, **current), sort_keys=True)
