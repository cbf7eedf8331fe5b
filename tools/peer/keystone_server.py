"""Serve keystone's WSGI application with gunicorn on 127.0.0.1:<port>.

Run with the peer suite's virtualenv (see run.py). keystone reads its
configuration from ``OS_KEYSTONE_CONFIG_FILES`` and parses the command
line as its own, so gunicorn is configured here, not by arguments.
"""

import sys

from gunicorn.app import base


class KeystoneServer(base.BaseApplication):

    def __init__(self, options):
        self.options = options
        super().__init__()

    def load_config(self):
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self):
        sys.argv = sys.argv[:1]
        from keystone.wsgi import api
        return api.application


if __name__ == '__main__':
    # One worker, one thread: SQLite takes one writer at a time, and
    # tempest's dynamic credentials create users and projects in parallel.
    KeystoneServer({'bind': '127.0.0.1:%d' % int(sys.argv[1]),
                    'workers': 1, 'threads': 1, 'timeout': 120,
                    'control_socket_disable': True}).run()
