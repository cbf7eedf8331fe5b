"""Policy enforcement: one oslo.policy Enforcer per process.

Controllers call ``authorize(rule, target, context)``; a denial is
``PolicyNotAuthorized``, a 403. Rule defaults come from
``cyborg.policies``; operators override them in ``[oslo_policy]
policy_file``, which the Enforcer reloads when it changes.
"""

import threading

from oslo_policy import policy

from cyborg.common import exception
from cyborg import conf as cyborg_conf
from cyborg import policies

CONF = cyborg_conf.CONF

_ENFORCER = None
_LOCK = threading.Lock()


def init(conf=CONF):
    """The process's Enforcer, made on first use."""
    global _ENFORCER
    with _LOCK:
        if _ENFORCER is None:
            enforcer = policy.Enforcer(conf)
            enforcer.register_defaults(policies.list_rules())
            _ENFORCER = enforcer
    return _ENFORCER


def reset():
    """Forget the Enforcer, so the next use reads config again (tests)."""
    global _ENFORCER
    with _LOCK:
        if _ENFORCER is not None:
            _ENFORCER.clear()
        _ENFORCER = None


def get_enforcer():
    """The Enforcer for the oslopolicy-* tools (``oslo.policy.enforcer``
    entry point). Their own command line is not ours, so config is parsed
    from the default files only."""
    CONF([], project='cyborg')
    return init()


def authorize(rule, target, context):
    """Raise ``PolicyNotAuthorized`` unless ``context`` may do ``rule`` on
    ``target`` (a dict such as ``{'project_id': ...}``)."""
    try:
        return init().authorize(rule, target, context, do_raise=True,
                                exc=exception.PolicyNotAuthorized,
                                action=rule)
    except policy.InvalidScope as exc:
        raise exception.PolicyNotAuthorized(action=rule) from exc
