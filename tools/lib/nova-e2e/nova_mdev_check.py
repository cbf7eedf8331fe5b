"""What Nova's own libvirt driver does with cyborg's bound MDEV ARQs.

Run with the Python of Nova's virtualenv (``cyborg/tests/e2e/test_vgpu.py``
does): reads ``{"arqs": [...], "known": [...]}`` as JSON on stdin, the
instance's ARQs exactly as cyborg's API shows them and the names of the
node devices libvirt knows, and hands the ARQs to Nova's
``LibvirtDriver._allocate_cyborg_mdevs``, the code Nova runs before it
spawns or hard-reboots a guest. No libvirt is needed: a stand-in host
records what Nova asks libvirt for. Prints JSON:

``nova``
    Nova's version;
``supported``
    False when this Nova has no ``_allocate_cyborg_mdevs`` (before 34);
``looked_up``
    the node device names Nova looked for;
``created``
    the mdevs Nova asked libvirt to create (``device_create``), each as
    ``{"parent", "type", "uuid"}`` of the node device Nova built;
``mdevs``
    the mdev uuids Nova gives the guest.
"""

import json
import sys
import types


class _LibvirtError(Exception):

    def __init__(self, code):
        super().__init__('no node device')
        self.code = code

    def get_error_code(self):
        return self.code


def _fake_libvirt():
    """A ``libvirt`` module with what ``_allocate_cyborg_mdevs`` uses."""
    module = types.ModuleType('libvirt')
    module.libvirtError = _LibvirtError
    module.VIR_ERR_NO_NODE_DEVICE = 88
    return module


class _Host:
    """libvirt's node devices as Nova's ``Host`` wrapper sees them."""

    def __init__(self, libvirt, known):
        self.libvirt = libvirt
        self.known = set(known)
        self.looked_up = []
        self.created = []

    def device_lookup_by_name(self, name):
        self.looked_up.append(name)
        if name not in self.known:
            raise self.libvirt.libvirtError(
                self.libvirt.VIR_ERR_NO_NODE_DEVICE)
        return name

    def device_create(self, conf):
        conf.to_xml()   # what libvirt would get: it must build
        self.created.append({'parent': conf.parent,
                             'type': conf.mdev_information.type,
                             'uuid': conf.mdev_information.uuid})
        return conf

    def device_define(self, conf):
        return types.SimpleNamespace(name=lambda: 'defined')

    def device_set_autostart(self, device, autostart):
        pass


def main():
    request = json.load(sys.stdin)
    sys.modules.setdefault('libvirt', _fake_libvirt())
    from importlib import metadata

    from nova.virt.libvirt import driver
    result = {'nova': metadata.version('nova'), 'looked_up': [],
              'created': [], 'mdevs': []}
    allocate = getattr(driver.LibvirtDriver, '_allocate_cyborg_mdevs', None)
    result['supported'] = allocate is not None
    if allocate is not None:
        # Only what _allocate_cyborg_mdevs touches of a LibvirtDriver: no
        # [mdev_*] configuration on Nova's side.
        host = _Host(driver.libvirt, request['known'])
        nova = types.SimpleNamespace(
            _host=host, pgpu_type_mapping={}, pgpu_type_default=None)
        nova._warn_if_nova_managed = types.MethodType(
            driver.LibvirtDriver._warn_if_nova_managed, nova)
        nova._create_mdev = types.MethodType(
            driver.LibvirtDriver._create_mdev, nova)
        result['mdevs'] = allocate(nova, request['arqs'])
        result['looked_up'] = host.looked_up
        result['created'] = host.created
    json.dump(result, sys.stdout)


if __name__ == '__main__':
    main()
