"""The names of a compute host, and which of them a bind may use.

Nova names a bind's host by nova-compute's ``[DEFAULT] host``; cyborg
knows a host by its agent's ``[DEFAULT] host`` and the compute node
provider name the agent gave. The two may differ by a domain: these
functions say when a name means a host and when it is ambiguous.
"""

from oslo_utils import netutils


def short_name(name):
    """The first label of the fully qualified ``name`` ('cmp-1' of
    'cmp-1.example.org'); None for a name without a dot or an IP
    address."""
    if '.' not in name or netutils.is_valid_ip(name):
        return None
    return name.split('.', 1)[0]


def same_host_name(a, b):
    """Whether ``a`` and ``b`` may name one host: equal, or one is the
    short form of the other. Two different fully qualified names never
    do ('cmp-1.a.org' and 'cmp-1.b.org' are two hosts)."""
    return a == b or short_name(a) == b or short_name(b) == a


def host_names(hostname, resource_provider_name):
    """The names a host is known by: its agent's ``[DEFAULT] host``, then
    the compute node provider name it gave (``[agent]
    resource_provider_name``), if another. The provider its devices hang
    under is one of these two: ``placement_sync`` looks it up by them
    and by no other name."""
    if resource_provider_name and resource_provider_name != hostname:
        return [hostname, resource_provider_name]
    return [hostname]


def bind_host_refusal(name, host, hosts):
    """Why a bind on host ``name`` (Nova's: nova-compute's ``[DEFAULT]
    host``) of a device of ``host`` is refused; None when it is not.
    ``hosts`` ({hostname: resource_provider_name}) holds ``host`` and
    the other known hosts that ``name`` may name.

    ``name`` is accepted when it is one of ``host_names`` of ``host``, or
    the short or fully qualified form of one of them that names no other
    host. Another host's own name (its agent's ``host``) is refused.
    """
    if name == host:
        return None
    if name in hosts:
        return '; %s is another host' % name
    own = host_names(host, hosts.get(host))
    if name in own:
        return None
    if not any(same_host_name(name, n) for n in own):
        return ''
    others = sorted(other for other, provider_name in hosts.items()
                    if other != host and any(
                        same_host_name(name, n)
                        for n in host_names(other, provider_name)))
    if others:
        return '; %s may also name host %s' % (name, ', '.join(others))
    return None
