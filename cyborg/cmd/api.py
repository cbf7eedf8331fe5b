"""cyborg-api: the REST API, served by cheroot in worker processes."""

import sys

from cyborg.api import server
from cyborg.common import service
from cyborg import conf as cyborg_conf

CONF = cyborg_conf.CONF


def main():
    service.prepare_service(sys.argv)
    workers = CONF.api.api_workers or server.default_workers()
    api = server.APIService(CONF, workers=workers)
    sys.exit(service.launch([api], workers=workers))


if __name__ == '__main__':
    main()
