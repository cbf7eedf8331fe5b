"""cyborg: accelerator lifecycle management for OpenStack clouds."""

from oslo_service import backend as _backend

# cyborg runs on oslo.service's threading backend, never on eventlet. The
# hook decides before any oslo.service module picks a backend itself.
_backend.register_backend_default_hook(
    lambda: _backend.BackendType.THREADING)
