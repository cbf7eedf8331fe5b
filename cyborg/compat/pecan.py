"""pecan: the argument lists of controller methods, and the custom
routes of controller classes, looked up once.

pecan asks for the argument list of the controller method at every
request (``pecan.core`` calls ``getargspec``, imported from
``pecan.util``), and its answer builds a new namedtuple class each time:
3 % of the API process's CPU in Nova's boot cycle. A function's argument
list does not change, so :func:`cache_argspecs` has pecan look for it once
per function. ``pecan.core.getargspec`` is no documented interface.

Its routing, for each controller object a request walks through, calls
``pecan.routing._detect_custom_path_segments``, which lists the object's
attributes (``dir``) before it looks whether the object's class was seen
already; only for a class not seen yet does it use that list (to find
its custom routes and their conflicts) and then mark the class seen, in
``pecan.routing.__observed_controllers__``. For a seen class the call
does nothing but list the attributes: 1.5 % of the API process's CPU in
Nova's boot cycle, walking three controllers a request.
:func:`detect_routes_once` has pecan make it only for a class it has not
seen.
"""

from pecan import core
from pecan import routing

DISTRIBUTION = 'pecan'
PRIVATE_NAMES = ('_detect_custom_path_segments',)
INTERNAL_NAMES = ('getargspec', '__observed_controllers__')


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


def detect_routes_once():
    """Have pecan's routing look for a controller class's custom routes
    only while the class is not among those it saw (a second call changes
    nothing)."""
    detect = routing._detect_custom_path_segments
    if getattr(detect, 'cyborg_once', False):
        return
    observed = routing.__observed_controllers__

    def once(obj):
        if obj.__class__ not in observed:
            detect(obj)
    once.cyborg_once = True
    once.__wrapped__ = detect
    routing._detect_custom_path_segments = once


def routes_detected_once():
    """Whether :func:`detect_routes_once` was called."""
    return getattr(routing._detect_custom_path_segments, 'cyborg_once',
                   False)
