"""Nova's databases for tools/nova-e2e, in one process.

Does what ``nova-manage api_db sync``, ``cell_v2 map_cell0``, ``cell_v2
create_cell`` and ``db sync`` do, one after the other, so that Nova's
long import is paid once instead of four times.

Usage: python nova_setup.py CONFIG_DIR CELL0_URL CELL1_URL TRANSPORT_URL

Runs inside Nova's virtualenv: no cyborg imports.
"""

import sys

from nova.cmd import manage
from nova import config
from nova import objects


def main(argv):
    config_dir, cell0, cell1, transport_url = argv[1:]
    config.parse_args(['nova-manage', '--config-dir', config_dir])
    objects.register_all()
    cells = manage.CellV2Commands()
    steps = [
        ('api_db sync', manage.ApiDbCommands().sync),
        ('cell_v2 map_cell0',
         lambda: cells.map_cell0(database_connection=cell0)),
        ('cell_v2 create_cell',
         lambda: cells.create_cell(name='cell1', database_connection=cell1,
                                   transport_url=transport_url)),
        ('db sync', manage.DbCommands().sync),
    ]
    for name, step in steps:
        result = step()
        print('nova-manage %s: %s' % (name, result), flush=True)
        if result not in (None, 0):
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
