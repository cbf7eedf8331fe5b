"""A real Placement service (the openstack-placement package) embedded in
the all-in-one, with its own SQLite database under the state directory."""

import os
import threading

from oslo_config import cfg
from placement import conf as placement_conf
from placement import db_api as placement_db_api
from placement import deploy as placement_deploy

from cyborg.db import api as db_api

PREFIX = '/placement'


def build_app(state_dir, connection=None, sync=True):
    """The Placement WSGI application, noauth2, on SQLite in
    ``state_dir`` or on the database of ``connection``; its schema is
    migrated first when ``sync``. On SQLite, writers take turns."""
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    url = connection or 'sqlite:///%s' % os.path.join(state_dir,
                                                      'placement.sqlite')
    conf.set_default('connection', url, group='placement_database')
    conf([], project='placement', default_config_files=[])
    conf.set_override('auth_strategy', 'noauth2', group='api')
    conf.set_override('sync_on_startup', sync, group='placement_database')
    # noauth2's admin has no service role; let it reshape (cyborg sets
    # many providers' inventories in one request), as a deployment
    # lets its service users.
    policy = os.path.join(state_dir, 'placement-policy.yaml')
    with open(policy, 'w') as f:
        f.write('"placement:reshaper:reshape": "role:admin or '
                'role:service"\n')
    conf.set_override('policy_file', policy, group='oslo_policy')
    placement_db_api.configure(conf)
    # Its SQLite file's log kept between transactions, as cyborg's.
    placement_db_api.placement_context_manager.append_on_engine_create(
        db_api.keep_sqlite_open)
    app = placement_deploy.loadapp(conf)
    if url.startswith('sqlite'):
        return _one_writer_at_a_time(app)
    return app


_READS = ('GET', 'HEAD', 'OPTIONS')


def _one_writer_at_a_time(app):
    """Placement on SQLite: requests that write take turns, since SQLite
    fails ("database is locked") a writer whose transaction read before
    another writer committed. Reads run concurrently."""
    lock = threading.Lock()

    def serialized(environ, start_response):
        if environ.get('REQUEST_METHOD') in _READS:
            return app(environ, start_response)
        with lock:
            # Placement's responses are small: read them whole while the
            # turn lasts.
            return list(app(environ, start_response))
    return serialized


def mount(main_app, placement_app, prefix=PREFIX):
    """One WSGI app: ``prefix`` goes to Placement, the rest to main_app."""
    def dispatch(environ, start_response):
        path = environ.get('PATH_INFO', '')
        if path == prefix or path.startswith(prefix + '/'):
            environ['SCRIPT_NAME'] = environ.get('SCRIPT_NAME', '') + prefix
            # "/placement" is Placement's root, which its noauth2 serves
            # without a token (as keystonemiddleware's setup does): "/".
            environ['PATH_INFO'] = path[len(prefix):] or '/'
            return placement_app(environ, start_response)
        return main_app(environ, start_response)
    return dispatch
