"""Every route of the API, read from its controller tree.

``all_routes()`` walks pecan's object dispatch the way pecan does: a
path segment is an attribute of the controller, ``index`` serves the
controller's own path, generic methods list the HTTP methods they answer
(``when``), and ``_lookup`` turns an unknown segment into a
sub-controller. A segment ``_lookup`` takes is written ``{id}`` in the
route's path; segments a ``_lookup`` accepts only by name are in
``LOOKUP_NAMES``. Unversioned paths (``/devices``) are the v2 routes
again and are not listed twice.

``handlers()`` lists every exposed handler function of the controller
modules, so a test can check that the walk reached all of them: a new
route the walk misses fails that test instead of escaping the sweeps.
"""

import collections
import importlib
import inspect
import pkgutil

from cyborg.api import controllers
from cyborg.api.controllers import root

PLACEHOLDER = '{id}'
# (controller class name) -> the literal segments its _lookup takes.
LOOKUP_NAMES = {'AcceleratorController': ('acc_specs', 'acc_spec')}
# _lookup methods that only alias routes listed elsewhere.
ALIASES = {'RootController'}

Route = collections.namedtuple('Route', 'path method handler')


def _config(value):
    """pecan's settings of an exposed method that answers requests;
    None for anything else, including the handlers ``when`` registered,
    which pecan refuses to route to by their own name."""
    cfg = getattr(value, '_pecan', None)
    return None if cfg is None or cfg.get('generic_handler') else cfg


def _methods(exposed):
    """{HTTP method: handler} of an exposed controller method; a
    non-generic one answers every method."""
    cfg = _config(exposed)
    generic = cfg.get('generic_handlers')
    if generic is None:
        return {'*': exposed}
    return {method: handler for method, handler in generic.items()
            if method != 'DEFAULT'}


def _is_controller(value):
    return (not inspect.isroutine(value) and not inspect.isclass(value)
            and type(value).__module__.startswith(controllers.__name__))


def _lookups(controller):
    lookup = getattr(controller, '_lookup', None)
    if lookup is None or type(controller).__name__ in ALIASES:
        return
    names = LOOKUP_NAMES.get(type(controller).__name__, (PLACEHOLDER,))
    for name in names:
        found = lookup(name)
        if found:
            yield name, found[0]


def _walk(controller, path):
    for name in dir(type(controller)):
        if name.startswith('_'):
            continue
        value = getattr(controller, name)
        if _config(value) is not None:
            where = path if name == 'index' else path + '/' + name
            for method, handler in _methods(value).items():
                yield Route(where or '/', method, handler)
        elif _is_controller(value):
            yield from _walk(value, path + '/' + name)
    for name, sub in _lookups(controller):
        yield from _walk(sub, path + '/' + name)


def all_routes():
    """Every (path template, method, handler) the API serves, sorted."""
    routes = _walk(root.RootController(), '')
    return sorted(routes, key=lambda r: (r.path, r.method))


def handlers():
    """Every handler function of the controller modules (the functions
    ``when`` registered and plain exposed methods other than the
    method-dispatching ``index`` skeletons)."""
    found = set()
    for info in pkgutil.walk_packages(controllers.__path__,
                                      controllers.__name__ + '.'):
        module = importlib.import_module(info.name)
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            for attr, value in vars(cls).items():
                if attr.startswith('_') or _config(value) is None:
                    continue
                found.update(_methods(value).values())
    return found
