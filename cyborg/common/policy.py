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

from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg import conf as cyborg_conf
from cyborg import policies

CONF = cyborg_conf.CONF

_ENFORCER = None
_LOCK = threading.Lock()

#: Seconds between two looks at the policy files for a change.
CHECK_INTERVAL = 2.0


#: Decisions an Enforcer keeps between two looks at its files.
MAX_DECISIONS = 4096


def _decision_key(rule, target, creds):
    """What a decision depends on besides the rules: the rule's name,
    the target's values and the caller's policy values; None when they
    cannot make a key (a rule object, a target value that is not a
    string or number, credentials that are not our RequestContext), and
    the decision is not kept."""
    if not (isinstance(rule, str) and isinstance(target, dict)
            and isinstance(creds, cyborg_context.RequestContext)):
        return None
    target_key = cyborg_context.frozen_items(target)
    creds_key = creds.policy_key()
    if target_key is None or creds_key is None:
        return None
    return rule, target_key, creds_key


class _Enforcer(policy.Enforcer):
    """An Enforcer that looks at its files at most every
    ``CHECK_INTERVAL`` seconds (``force_reload`` loads them at once), and
    keeps its decisions until then.

    A decision is a function of the rules and of the rule name, target
    and credentials it is asked about; the rules change only when the
    files are read again (or set by code), and the kept decisions are
    dropped then. oslo.policy evaluates a rule anew at every request
    (an argument inspection and a literal parse per check): 9 % of the
    API process's CPU in Nova's boot cycle. Only allowed decisions are
    answered from the memory; a denial is evaluated again, so that it
    raises exactly as oslo.policy raises it."""

    def __init__(self, conf, clock=time.monotonic, **kwargs):
        super().__init__(conf, **kwargs)
        self._clock = clock
        self._next_check = None
        self._decisions = {}

    def load_rules(self, force_reload=False):
        now = self._clock()
        if (not force_reload and self._next_check is not None
                and now < self._next_check):
            return
        # Dropped before and after: a request evaluated against the old
        # rules while they are read keeps its decision in a dict that is
        # gone by the time the new rules are in.
        self._decisions = {}
        super().load_rules(force_reload)
        self._decisions = {}
        self._next_check = now + CHECK_INTERVAL

    def set_rules(self, *args, **kwargs):
        self._decisions = {}
        super().set_rules(*args, **kwargs)
        self._decisions = {}

    def clear(self):
        self._decisions = {}
        super().clear()

    def register_default(self, default):
        self._decisions = {}
        super().register_default(default)

    def enforce(self, rule, target, creds, do_raise=False, exc=None,
                *args, **kwargs):
        self.load_rules()
        key = _decision_key(rule, target, creds)
        decisions = self._decisions
        if key is not None:
            allowed = decisions.get(key)
            if allowed:
                return allowed
        allowed = super().enforce(rule, target, creds, do_raise, exc,
                                  *args, **kwargs)
        if key is not None and allowed:
            if len(decisions) >= MAX_DECISIONS:
                decisions.clear()
            decisions[key] = allowed
        return allowed


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
