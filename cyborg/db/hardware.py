"""What the drivers of each host's agent saw (``host_hardware``): written
with the report that carried it, read by ``GET /v2/hardware``."""

from cyborg.common import exception
from cyborg.db import api as db_api
from cyborg.db import models

#: The columns a HardwareFunction fills, in the order the API shows them.
COLUMNS = ('address', 'vendor_id', 'product_id', 'name', 'kernel_driver',
           'driver', 'offered', 'reason', 'action', 'setup_required',
           'reboot_required')


def replace(context, host_id, functions):
    """Make the host's rows those of ``functions`` (HardwareFunctions),
    inside the caller's writer transaction; only rows that differ are
    written. Returns whether anything changed. A field an agent of an
    older release does not send (``name`` before HardwareFunction 1.1)
    is stored as null."""
    rows = {(r.driver, r.address): r for r in context.session.query(
        models.HostHardware).filter_by(host_id=host_id)}
    changed = False
    for function in functions:
        values = {c: getattr(function, c) if function.obj_attr_is_set(c)
                  else None for c in COLUMNS}
        row = rows.pop((function.driver, function.address), None)
        if row is None:
            context.session.add(models.HostHardware(host_id=host_id,
                                                    **values))
            changed = True
            continue
        for column, value in values.items():
            if getattr(row, column) != value:
                setattr(row, column, value)
                changed = True
    for row in rows.values():
        context.session.delete(row)
        changed = True
    context.session.flush()
    return changed


@db_api.reader
def get_all(context, hostname=None, offered=None):
    """Every host's rows as dicts with ``host`` first, by host, address
    and driver, of one host and offered or not if asked; HostNotFound for
    an unknown ``hostname``."""
    # Plain rows, not ORM objects: building tens of thousands of objects
    # cost ten times the query.
    hardware = models.HostHardware.__table__.c
    query = (context.session.query(models.Host.hostname,
                                   *(hardware[c] for c in COLUMNS))
             .join(models.HostHardware,
                   models.HostHardware.host_id == models.Host.id))
    if hostname is not None:
        if not context.session.query(models.Host.id).filter_by(
                hostname=hostname).first():
            raise exception.HostNotFound(host=hostname)
        query = query.filter(models.Host.hostname == hostname)
    if offered is not None:
        query = query.filter(models.HostHardware.offered.is_(offered))
    query = query.order_by(models.Host.hostname, models.HostHardware.address,
                           models.HostHardware.driver)
    keys = ('host',) + COLUMNS
    return [dict(zip(keys, row, strict=True)) for row in query]
