"""Which Glance images may be programmed: the owners trusted by default."""

from unittest import mock

from cyborg.common.clients import glance
from cyborg.common import exception
from cyborg.tests import base


class TrustedOwnersTest(base.TestCase):

    def client(self, project):
        client = mock.Mock(conf=self.conf)
        client.get_project_id.return_value = project
        return client

    def test_the_credentials_project_by_default(self):
        self.assertEqual(['ops'], glance.trusted_owners(self.client('ops')))

    def test_configured_owners_win(self):
        self.flags(trusted_image_owners=['a', 'b'], group='glance')
        self.assertEqual(['a', 'b'],
                         glance.trusted_owners(self.client('ops')))

    def test_no_project_and_no_owners_is_an_error(self):
        error = self.assertRaises(exception.GlanceUnavailable,
                                  glance.trusted_owners, self.client(None))
        self.assertIn('trusted_image_owners', str(error))
