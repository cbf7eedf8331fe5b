"""Device profiles: create and delete (the only writes they have)."""

from oslo_log import log as logging

from cyborg.db import device_profiles as db_device_profiles

LOG = logging.getLogger(__name__)


class DeviceProfiles:

    def __init__(self, conf):
        self.conf = conf

    def create(self, context, values):
        """Store a profile the API validated; returns its uuid."""
        uuid = db_device_profiles.create(context, values)
        LOG.info('Created device profile %s (%s)', values['name'], uuid)
        return uuid

    def delete(self, context, uuids):
        """Delete profiles by uuid or name, all of them or none."""
        db_device_profiles.delete(context, uuids)
        LOG.info('Deleted device profiles %s', ', '.join(uuids))
