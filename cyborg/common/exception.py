"""The cyborg exception hierarchy.

Every exception carries a message template (``msg_fmt``) and the HTTP status
it maps to (``code``). Generic parents carry the status; the API maps
``code`` once. This module is allowed across RPC, so a conductor exception
arrives at the API as the same class.
"""

from http import client as http

from oslo_log import log as logging

from cyborg.i18n import _

LOG = logging.getLogger(__name__)


class CyborgException(Exception):
    """Base class. Subclasses set ``msg_fmt`` and, if not 500, ``code``."""

    msg_fmt = _('An unknown exception occurred.')
    code = http.INTERNAL_SERVER_ERROR
    headers = {}
    safe = False

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        self.kwargs.setdefault('code', self.code)
        if not message:
            message = self._format(kwargs)
        super().__init__(message)

    def _format(self, kwargs):
        try:
            return self.msg_fmt % kwargs
        except (KeyError, TypeError):
            from cyborg.conf import CONF
            LOG.exception('Exception in string format operation, '
                          'kwargs: %s', kwargs)
            if CONF.fatal_exception_format_errors:
                raise
            return self.msg_fmt

    def __str__(self):
        return self.args[0] if self.args else ''


class Invalid(CyborgException):
    msg_fmt = _('Unacceptable parameters: %(reason)s')
    code = http.BAD_REQUEST


class InvalidParameterValue(Invalid):
    msg_fmt = _('%(err)s')


class InvalidUUID(Invalid):
    msg_fmt = _('Expected a UUID but received %(uuid)s.')


class InvalidAPIVersion(CyborgException):
    msg_fmt = _('%(reason)s')
    code = http.NOT_ACCEPTABLE


class NotAuthorized(CyborgException):
    msg_fmt = _('Not authorized.')
    code = http.UNAUTHORIZED


class Forbidden(CyborgException):
    msg_fmt = _('Forbidden.')
    code = http.FORBIDDEN


class PolicyNotAuthorized(Forbidden):
    msg_fmt = _('Policy does not allow %(action)s to be performed.')


class NotFound(CyborgException):
    msg_fmt = _('Resource could not be found.')
    code = http.NOT_FOUND


class HostNotFound(NotFound):
    msg_fmt = _('Host %(host)s could not be found.')


class DriverNotFound(NotFound):
    msg_fmt = _('Accelerator driver %(name)s could not be found.')


class Conflict(CyborgException):
    msg_fmt = _('Conflict.')
    code = http.CONFLICT


class DuplicateName(Conflict):
    msg_fmt = _('A %(resource)s named %(name)s already exists.')


class Locked(CyborgException):
    msg_fmt = _('%(reason)s')
    code = http.LOCKED


class ServiceUnavailable(CyborgException):
    msg_fmt = _('%(reason)s')
    code = http.SERVICE_UNAVAILABLE


class DriverLoadError(CyborgException):
    msg_fmt = _('Accelerator driver %(name)s could not be loaded: '
                '%(reason)s')


class DBNotAtHead(CyborgException):
    msg_fmt = _('The database schema is at %(current)s but this release '
                'needs %(head)s. Run "cyborg-dbsync upgrade".')


class PlacementError(CyborgException):
    msg_fmt = _('Placement request %(method)s %(url)s failed with '
                '%(status)s: %(detail)s')
