"""cyborg: accelerator lifecycle management for OpenStack clouds."""

import sys
import warnings



def _a_library_imports_eventlet():
    """Whether an installed library imports eventlet unconditionally:
    oslo.privsep before 3.11 (stable/2026.1's upper-constraints pin
    3.10.1) does so in its daemon module, which cyborg loads."""
    from importlib import metadata
    try:
        version = metadata.version('oslo.privsep')
    except metadata.PackageNotFoundError:
        return False
    major, minor = version.split('.')[:2]
    return (int(major), int(minor)) < (3, 11)


# cyborg never uses eventlet, but futurist (under oslo.service and
# oslo.messaging) imports it when it is installed, and eventlet then
# loads dnspython and patched copies of it: some 250 modules, 9 MiB and
# 0.6 s at the start of every daemon. A library that asks for it gets the
# ImportError it already handles. A process that imported eventlet before
# cyborg (a test runner, say) keeps it, and so do installations where a
# library cannot do without it.
if not _a_library_imports_eventlet():
    sys.modules.setdefault('eventlet', None)

from oslo_service import backend as _backend  # noqa: E402

# eventlet is installed as a dependency of some oslo libraries, and merely
# importing it warns. cyborg never uses it; keep that noise off the
# operator's terminal.
warnings.filterwarnings('ignore', message=r'(?s).*Eventlet is deprecated')
warnings.filterwarnings('ignore', message='eventletutils module is deprecated')

# cyborg runs on oslo.service's threading backend, never on eventlet. The
# hook decides before any oslo.service module picks a backend itself.
_backend.register_backend_default_hook(
    lambda: _backend.BackendType.THREADING)
