"""What every controller does the same way: the HTTP methods a path
serves, policy checks, uuids in paths and timestamps in views. Bodies
and query strings are read by ``cyborg.api.validation``."""

from oslo_utils import uuidutils
import pecan

from cyborg.common import exception
from cyborg.common import policy


def methods():
    """A controller's ``index`` (or an action such as ``enable``) that
    serves only the HTTP methods registered on it::

        index = common.methods()

        @index.when('GET')
        def index_get(self):
            ...

    ``when`` is pecan's, its template JSON unless told. Any other method
    is a 405 with the error envelope (``ErrorHook``) and an ``Allow``
    header listing the registered methods (pecan adds it to a 405 of a
    generic method).
    """
    @pecan.expose(generic=True, template='json')
    def index(self):
        pecan.abort(405)

    register = index.when

    def when(method, template='json', **kwargs):
        return register(method, template=template, **kwargs)

    index.when = when
    return index


def authorize(rule, project_id=None):
    """Check ``rule`` for the caller; the target is the caller's own
    project unless ``project_id`` names the owner. Returns the context."""
    context = pecan.request.context
    target = {'project_id': project_id or context.project_id,
              'user_id': context.user_id}
    policy.authorize(rule, target, context)
    return context


def check_uuid(value):
    if not uuidutils.is_uuid_like(value):
        raise exception.InvalidUUID(uuid=value)
    return value


def timestamp(value):
    """A database time (naive UTC) in ISO 8601 with its offset."""
    return value.isoformat() + '+00:00' if value else None


def created(location):
    """Answer 201 with ``Location``."""
    pecan.response.status = 201
    pecan.response.headers['Location'] = location
