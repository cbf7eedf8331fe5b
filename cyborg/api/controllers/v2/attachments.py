"""``/v2/attachments`` (2.5): attach-instance and detach-instance.
``POST {"instance_uuid", "device_profile_name", "host"?}`` attaches the
profile's accelerators to the instance through ARQs (Placement picks the
providers, the conductor binds them) and answers 201 with the bound
ARQs; ``DELETE /v2/attachments/{instance_uuid}`` detaches them all."""

import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers.v2 import _ops
from cyborg.api.controllers.v2 import accelerator_requests
from cyborg.api.schemas import attachments as schema
from cyborg.api import validation
from cyborg.db import accelerator_requests as db_arqs
from cyborg import policies


class AttachmentController:

    def __init__(self, instance_uuid):
        self.instance_uuid = instance_uuid

    index = common.methods()

    @index.when('DELETE')
    def index_delete(self):
        context = common.authorize(policies.ATTACHMENT_DELETE)
        common.check_uuid(self.instance_uuid)
        pecan.request.conductor_api.attachment_delete(context,
                                                      self.instance_uuid)
        pecan.response.status = 204


class AttachmentsController:

    min_version = _ops.VERSION

    index = common.methods()

    @index.when('POST')
    def index_post(self):
        request = pecan.request
        context = common.authorize(policies.ATTACHMENT_CREATE)
        body = validation.body(request, schema.CREATE)
        uuids = request.conductor_api.attachment_create(
            context, body['instance_uuid'], body['device_profile_name'],
            body.get('host'))
        pecan.response.status = 201
        return {'arqs': [accelerator_requests.view(request, arq)
                         for arq in db_arqs.get_many(context, uuids)]}

    @pecan.expose()
    def _lookup(self, instance_uuid, *remainder):
        return AttachmentController(instance_uuid), list(remainder)
