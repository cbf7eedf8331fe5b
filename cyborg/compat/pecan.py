"""pecan: the argument lists of controller methods, looked up once.

pecan asks for the argument list of the controller method at every
request (``pecan.core`` calls ``getargspec``, imported from
``pecan.util``), and its answer builds a new namedtuple class each time:
3 % of the API process's CPU in Nova's boot cycle. A function's argument
list does not change, so :func:`cache_argspecs` has pecan look for it once
per function. ``pecan.core.getargspec`` is no documented interface.
"""

from pecan import core

DISTRIBUTION = 'pecan'
PRIVATE_NAMES = ()
INTERNAL_NAMES = ('getargspec',)


def cached_argspecs(getargspec):
    """``getargspec`` (pecan's), keeping what it found per function (a
    bound method's is its function's)."""
    found = {}

    def cached(method):
        function = getattr(method, '__func__', method)
        try:
            return found[function]
        except (KeyError, TypeError):
            pass
        argspec = getargspec(method)
        try:
            found[function] = argspec
        except TypeError:
            pass
        return argspec
    cached.cyborg_cached = True
    return cached


def cache_argspecs():
    """Have pecan look for each controller method's argument list once
    per function (a second call changes nothing)."""
    if not getattr(core.getargspec, 'cyborg_cached', False):
        core.getargspec = cached_argspecs(core.getargspec)


def argspecs_cached():
    """Whether :func:`cache_argspecs` was called."""
    return getattr(core.getargspec, 'cyborg_cached', False)
