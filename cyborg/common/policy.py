"""Policy enforcement: one oslo.policy Enforcer per process.

Controllers call ``authorize(rule, target, context)``; a denial is
``PolicyNotAuthorized``, a 403. Rule defaults come from
``cyborg.policies``; operators override them in ``[oslo_policy]
policy_file``, which the Enforcer reloads when it changes: it looks for a
change at most once every ``CHECK_INTERVAL`` seconds, not at every
request (oslo.policy searches the config directories for the file and
its ``policy_dirs`` on each check: 6 % of the API process's CPU in
Nova's boot cycle).
"""

import threading
import time

from oslo_policy import policy

from cyborg.common import exception
from cyborg import conf as cyborg_conf
from cyborg import policies

CONF = cyborg_conf.CONF

_ENFORCER = None
_LOCK = threading.Lock()

#: Seconds between two looks at the policy files for a change.
CHECK_INTERVAL = 2.0


class _Enforcer(policy.Enforcer):
    """An Enforcer that looks at its files at most every
    ``CHECK_INTERVAL`` seconds (``force_reload`` loads them at once)."""

    def __init__(self, conf, clock=time.monotonic, **kwargs):
        super().__init__(conf, **kwargs)
        self._clock = clock
        self._next_check = None

    def load_rules(self, force_reload=False):
        now = self._clock()
        if (not force_reload and self._next_check is not None
                and now < self._next_check):
            return
        super().load_rules(force_reload)
        self._next_check = now + CHECK_INTERVAL


def init(conf=CONF):
    """The process's Enforcer, made on first use."""
    global _ENFORCER
    with _LOCK:
        if _ENFORCER is None:
            enforcer = _Enforcer(conf)
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
