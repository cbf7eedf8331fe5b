"""Daemons load what they use: the agent serves no API and opens no
database, so it loads neither pecan nor openstacksdk nor SQLAlchemy."""

import json
import subprocess
import sys

from cyborg.tests import base

HEAVY = ('pecan', 'wsme', 'openstack', 'sqlalchemy', 'alembic',
         'keystonemiddleware', 'placement', 'cheroot', 'oslo_policy')


def loaded_after(code):
    """The top-level packages among HEAVY that ``code`` loads, run in a
    new interpreter."""
    script = ('import sys\n%s\nimport json\nprint(json.dumps(sorted('
              '{m.split(".")[0] for m in sys.modules} & set(%r))))'
              % (code, HEAVY))
    out = subprocess.run([sys.executable, '-c', script], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


class AgentImportsTest(base.TestCase):

    def test_agent_loads_no_api_nor_database(self):
        self.assertEqual([], loaded_after(
            'from cyborg.cmd import agent\n'
            'from cyborg.common import service\n'
            'from cyborg.agent import manager\n'
            'service.prepare_service(["cyborg-agent"], '
            'default_config_files=[])\n'
            'manager.AgentManager("h", service.CONF).get_hardware(None)'))

    def test_conductor_loads_no_api(self):
        self.assertEqual(['alembic', 'openstack', 'sqlalchemy'], loaded_after(
            'from cyborg.cmd import conductor'))
