"""cyborg-aio: the whole service in one process (see cyborg.aio)."""

import argparse
import os
import sys

from cyborg.aio import service as aio_service
from cyborg.common import service

DEFAULT_STATE_DIR = os.path.join('~', '.local', 'state', 'cyborg-aio')


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='cyborg-aio', description='Run cyborg (API, conductor, agent '
        'and an embedded Placement) in one process.')
    parser.add_argument('--host', default='127.0.0.1',
                        help='address to listen on (default %(default)s)')
    parser.add_argument('--port', type=int, default=6666,
                        help='port to listen on (default %(default)s)')
    parser.add_argument('--state-dir', default=DEFAULT_STATE_DIR,
                        help='where the databases live (default '
                             '%(default)s)')
    parser.add_argument('--sysfs-root',
                        help='a directory that stands for /sys, or a '
                             'capture file (cyborg-agent --capture)')
    return parser.parse_known_args(argv)


def main(argv=None):
    argv = sys.argv if argv is None else argv
    args, rest = parse_args(argv[1:])
    service.prepare_service([argv[0]] + rest)
    conf = service.CONF
    aio_service.configure(conf, args.host, args.port,
                          os.path.expanduser(args.state_dir),
                          args.sysfs_root)
    return service.run_in_foreground(aio_service.AllInOne(conf))


if __name__ == '__main__':
    sys.exit(main())
