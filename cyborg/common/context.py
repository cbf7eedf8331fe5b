"""Request context: who is calling, carried through API, RPC and DB."""

from oslo_context import context


#: Roles of a service token that make a request a service's, unless the
#: API says otherwise (``[api] service_token_roles``).
SERVICE_ROLES = ('service',)
#: Where the API keeps a request's context in its WSGI environ, once made.
ENVIRON_KEY = 'cyborg.context'


class RequestContext(context.RequestContext):
    """A context that also carries an oslo.db transaction, once
    :mod:`cyborg.db.api` is loaded: it makes the class a transaction
    context provider, so that a daemon that never opens the database
    (the agent) does not load oslo.db and SQLAlchemy."""

    def __init__(self, service_roles=None, accepted_service_roles=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.service_roles = list(service_roles or [])
        #: The service token roles that make ``is_service`` true.
        self.accepted_service_roles = tuple(accepted_service_roles or
                                            SERVICE_ROLES)

    @property
    def is_service(self):
        """True when a service token came along with one of the accepted
        service roles (``service``): another role of the token (``admin``,
        ``member``) does not make a request a service's."""
        return any(role in self.accepted_service_roles
                   for role in self.service_roles)

    def to_policy_values(self):
        values = super().to_policy_values()
        values['is_admin'] = self.is_admin
        return values

    def policy_key(self):
        """Every value of ``to_policy_values`` as a hashable tuple, by
        which the policy Enforcer keeps its decisions; None when one of
        them cannot be part of a key. Read from oslo.context's values,
        which this class adds ``is_admin`` to as a deprecated key
        (reading that one from ``to_policy_values`` warns)."""
        values = frozen_items(super().to_policy_values())
        if values is None or not isinstance(self.is_admin, bool):
            return None
        return values + (('is_admin', self.is_admin),)

    def to_dict(self):
        values = super().to_dict()
        values['service_roles'] = self.service_roles
        values['accepted_service_roles'] = list(self.accepted_service_roles)
        return values

    @classmethod
    def from_dict(cls, values, **kwargs):
        kwargs.setdefault('service_roles', values.get('service_roles'))
        kwargs.setdefault('accepted_service_roles',
                          values.get('accepted_service_roles'))
        return super().from_dict(values, **kwargs)


def _frozen(value):
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        items = tuple(_frozen(v) for v in value)
        return items if _NOT_FROZEN not in items else _NOT_FROZEN
    return _NOT_FROZEN


_NOT_FROZEN = object()


def frozen_items(mapping):
    """The sorted ``(name, value)`` pairs of ``mapping``, lists as
    tuples; None when a value is something else than None, a string, a
    number or a list of those."""
    items = tuple(sorted((name, _frozen(mapping[name])) for name in mapping))
    if any(value is _NOT_FROZEN for _name, value in items):
        return None
    return items


def get_admin_context():
    """A context for work the services do on their own behalf."""
    return RequestContext(is_admin=True, roles=['admin'],
                          overwrite=False)
