"""What the conductor's RPC client says of message versions, for the
tests' stand-in conductors: :class:`RPCVersions` gives one the
``can_send_version()`` and ``cap_version()`` of
:class:`cyborg.conductor.rpcapi.ConductorAPI`, answered by
oslo.messaging's own RPC client (on its fake transport, which sends
nothing here) capped at this release's conductor RPC version."""

from oslo_config import cfg
import oslo_messaging as messaging

from cyborg.conductor import rpcapi as conductor_rpcapi

_TRANSPORT = []


def _client():
    if not _TRANSPORT:
        _TRANSPORT.append(messaging.get_rpc_transport(cfg.ConfigOpts(),
                                                      url='fake:/'))
    return messaging.get_rpc_client(
        _TRANSPORT[0], messaging.Target(topic='cyborg-conductor'),
        version_cap=conductor_rpcapi.ConductorAPI.RPC_API_VERSION)


class RPCVersions:
    """A stand-in conductor's client side of versions, as ConductorAPI's."""

    _rpc_client = None

    @property
    def client(self):
        if self._rpc_client is None:
            self._rpc_client = _client()
        return self._rpc_client

    can_send_version = conductor_rpcapi.ConductorAPI.can_send_version
    cap_version = conductor_rpcapi.ConductorAPI.cap_version
    RPC_API_VERSION = conductor_rpcapi.ConductorAPI.RPC_API_VERSION
