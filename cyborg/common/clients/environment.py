"""What requests takes from the environment (proxies, CA bundles), read
once for a keystoneauth session instead of on every request."""

import os
from urllib import request as urllib_request


# What requests takes from the environment besides proxies.
_CA_BUNDLE_VARIABLES = ('REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE')


def settings():
    """The HTTP settings of the environment requests would use: proxies
    (``*_proxy``, ``no_proxy``) and CA bundles, by name."""
    found = [name + '_proxy' for name in urllib_request.getproxies()]
    return found + [name for name in _CA_BUNDLE_VARIABLES
                    if os.environ.get(name)]


def settle(session):
    """Read what requests takes from the environment once, for the
    keystoneauth ``session``, rather than have requests look on every
    request (a tenth of the conductor's CPU spent in its Placement
    client in a storm): a CA bundle (``REQUESTS_CA_BUNDLE``, else
    ``CURL_CA_BUNDLE``) becomes the session's ``verify`` where the
    configuration asks for the default (no ``cafile``, not
    ``insecure``), as requests would apply it. Proxies depend on each
    URL (``no_proxy``): where any is set, requests keeps reading the
    environment. Nor is ``~/.netrc`` read then, whose credentials
    requests would add to every request: cyborg's sessions authenticate
    with keystone tokens."""
    if urllib_request.getproxies():
        return
    if session.verify is True:
        bundle = next((os.environ[name] for name in _CA_BUNDLE_VARIABLES
                       if os.environ.get(name)), None)
        if bundle:
            session.verify = bundle
    session.session.trust_env = False
