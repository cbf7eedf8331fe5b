"""Loading accelerator drivers: stevedore entry points in namespace
``cyborg.accelerator.driver``, chosen by ``[agent] enabled_drivers``."""

from oslo_log import log as logging
import stevedore

from cyborg.objects import host as host_obj

LOG = logging.getLogger(__name__)

NAMESPACE = 'cyborg.accelerator.driver'


def load(names, conf):
    """Load the named drivers.

    Returns ``(drivers, statuses)``: the loaded driver objects by name, and
    one HostDriver per requested name saying READY or FAILED (with the
    reason). A driver that fails does not stop the others.
    """
    failures = {}

    def on_load_failure(_manager, entrypoint, error):
        LOG.error('Accelerator driver %s failed to load: %s',
                  entrypoint.name, error)
        failures[entrypoint.name] = str(error) or type(error).__name__

    def on_missing(missing):
        for name in missing:
            LOG.error('Accelerator driver %s is not installed', name)
            failures[name] = 'no driver of that name is installed'

    manager = stevedore.NamedExtensionManager(
        NAMESPACE, names=list(names), invoke_on_load=True,
        invoke_args=(conf,), name_order=True,
        on_load_failure_callback=on_load_failure,
        on_missing_entrypoints_callback=on_missing)
    drivers = {ext.name: ext.obj for ext in manager}
    statuses = []
    for name in names:
        if name in drivers:
            statuses.append(drivers[name].hello(name))
        else:
            statuses.append(host_obj.HostDriver(
                name=name, status='FAILED', device_type=None, version=None,
                error=failures.get(name, 'not loaded')))
    return drivers, statuses
