"""Links in response bodies, pointing where the API is really mounted.

The base is ``[api] public_endpoint`` when an operator sets it (the API is
behind a proxy that rewrites URLs), else the URL the request came in on,
mount prefix (SCRIPT_NAME) included, so ``/accelerator/v2`` under uwsgi
and ``/v2`` on the standalone port both get correct links.
"""

from cyborg import conf as cyborg_conf

CONF = cyborg_conf.CONF


# Where a request keeps its base URL once worked out: a list of a
# thousand items makes two thousand links.
_BASE_KEY = 'cyborg.base_url'


def base_url(request):
    """The API's root URL, without a trailing slash."""
    environ = request.environ
    base = environ.get(_BASE_KEY)
    if base is None:
        base = (CONF.api.public_endpoint
                or request.application_url).rstrip('/')
        environ[_BASE_KEY] = base
    return base


def make_link(request, rel, *parts):
    """``{"href": <base>/<parts...>, "rel": rel}``; an empty last part
    gives a trailing slash."""
    return {'href': '/'.join([base_url(request), *parts]), 'rel': rel}
