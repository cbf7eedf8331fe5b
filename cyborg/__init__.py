"""cyborg: accelerator lifecycle management for OpenStack clouds."""

import warnings

from oslo_service import backend as _backend

# eventlet is installed as a dependency of some oslo libraries, and merely
# importing it warns. cyborg never uses it; keep that noise off the
# operator's terminal.
warnings.filterwarnings('ignore', message=r'(?s).*Eventlet is deprecated')
warnings.filterwarnings('ignore', message='eventletutils module is deprecated')

# cyborg runs on oslo.service's threading backend, never on eventlet. The
# hook decides before any oslo.service module picks a backend itself.
_backend.register_backend_default_hook(
    lambda: _backend.BackendType.THREADING)
