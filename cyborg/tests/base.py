"""Test bases: a clean configuration for every test."""

import fixtures
from oslo_config import fixture as config_fixture
import testtools

from cyborg.common import rpc
from cyborg import conf as cyborg_conf
from cyborg.conf import opts as conf_opts
from cyborg import objects

CONF = cyborg_conf.CONF


def comparable(obj):
    """``obj.obj_to_primitive()`` with its lists of changed fields sorted:
    they come from sets, whose order depends on the hash seed and on the
    order the fields were set in, so two equal objects may differ there
    (and ``==`` between versioned objects compares those lists)."""
    def clean(value):
        if isinstance(value, dict):
            return {key: sorted(item) if key.endswith('.changes')
                    else clean(item) for key, item in value.items()}
        if isinstance(value, list):
            return [clean(item) for item in value]
        return value
    return clean(obj.obj_to_primitive())


class ConfFixture(fixtures.Fixture):
    """cyborg's CONF, parsed with no files, reset after the test."""

    def _setUp(self):
        self.conf = self.useFixture(config_fixture.Config(CONF)).conf
        rpc.set_defaults()
        conf_opts.set_lib_defaults()
        CONF([], project='cyborg', default_config_files=[])
        self.conf.set_default('host', 'test-host')
        self.conf.set_default('connection', 'sqlite://', group='database')


class TestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(120, gentle=True))
        self.conf_fixture = self.useFixture(ConfFixture())
        self.conf = CONF
        objects.register_all()

    def flags(self, group=None, **kwargs):
        for key, value in kwargs.items():
            self.conf.set_override(key, value, group=group)
