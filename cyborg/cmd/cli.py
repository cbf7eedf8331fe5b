"""cyborg: the admin command line (see cyborg.cli)."""

import sys

from cyborg.cli import app


def main(argv=None):
    return app.CyborgApp().run(sys.argv[1:] if argv is None else argv)


if __name__ == '__main__':
    sys.exit(main())
