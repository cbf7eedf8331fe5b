"""cyborg: accelerator lifecycle management for OpenStack clouds."""

import sys
import warnings

# cyborg never uses eventlet, but futurist (under oslo.service and
# oslo.messaging) imports it when it is installed, and eventlet then
# loads dnspython and patched copies of it: some 250 modules, 9 MiB and
# 0.6 s at the start of every daemon. A library that asks for it gets the
# ImportError it already handles. A process that imported eventlet before
# cyborg (a test runner, say) keeps it.
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
