"""Hosts, their agents' hello and the drivers they run."""

import hashlib
import os
import socket
import uuid

from oslo_utils import versionutils

from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class HostDriver(base.CyborgObject):
    """One accelerator driver as an agent loaded it (the driver hello)."""

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'name': fields.StringField(),
        'device_type': fields.StringField(nullable=True),
        'version': fields.StringField(nullable=True),
        'status': fields.DriverStatusField(),
        'error': fields.StringField(nullable=True),
    }


#: Longest state file path an agent id spells out (a longer one is
#: hashed), so that the id fits its column.
_SEAT_PATH_MAX = 160


def new_agent_id(state_file):
    """Who this agent process is, for its hellos:
    ``<machine>:<state file>/<pid>/<random>``: its *seat*, the machine's
    hostname (not ``[DEFAULT] host``) and its state file, which one agent
    at a time holds (it is locked); then its process id and a part new at
    each start."""
    path = os.path.abspath(state_file)
    if len(path) > _SEAT_PATH_MAX:
        path = 'sha256-' + hashlib.sha256(path.encode()).hexdigest()[:16]
    return '%s:%s/%d/%s' % (socket.gethostname()[:64], path, os.getpid(),
                            uuid.uuid4().hex[:12])


def seat_of(agent_id):
    """The seat (machine and state file) of an agent id: an agent with
    the seat of another is that one restarted."""
    return agent_id.rsplit('/', 2)[0]


@base.CyborgObjectRegistry.register
class AgentHello(base.CyborgObject):
    """What an agent sends when it starts (the conductor hello)."""

    # Version 1.0: initial version
    # Version 1.1: resource_provider_name, the name of the host's compute
    #              node provider in Placement ([agent]
    #              resource_provider_name); a hello without it means the
    #              hostname
    # Version 1.2: no new field; the agent knows Host 1.2 (its
    #              heartbeat_topic), so the answer may carry it
    # Version 1.3: agent_id, who the agent is ("<machine>:<state file>/
    #              <pid>/<random>", new at each start): the conductor
    #              refuses a second agent for a host a live one holds
    VERSION = '1.3'

    fields = {
        'hostname': fields.StringField(),
        'status': fields.StringField(default='READY'),
        'endpoint': fields.StringField(nullable=True),
        'version': fields.StringField(nullable=True),
        'drivers': fields.ListOfObjectsField('HostDriver', default=[]),
        'resource_provider_name': fields.StringField(nullable=True),
        'agent_id': fields.StringField(nullable=True),
    }
    # The HostDriver version each version sends, for backports.
    obj_relationships = {'drivers': [('1.0', '1.0')]}

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        if target < (1, 1):
            primitive.pop('resource_provider_name', None)
        if target < (1, 3):
            primitive.pop('agent_id', None)


@base.CyborgObjectRegistry.register
class Host(base.CyborgObject):
    """A host as the conductor records it."""

    # Version 1.0: initial version
    # Version 1.1: report_seq, the sequence of the newest report of the
    #              host applied: its agent's next report has a higher one
    # Version 1.2: heartbeat_topic, where the agent casts its heartbeats
    #              (None: to the conductor's topic); see
    #              cyborg.common.heartbeats
    VERSION = '1.2'

    fields = dict(base.TimestampedObject.fields, **{
        'id': fields.IntegerField(),
        'hostname': fields.StringField(),
        'status': fields.HostStatusField(),
        'endpoint': fields.StringField(nullable=True),
        'version': fields.StringField(nullable=True),
        'last_seen_at': fields.DateTimeField(),
        'report_generation': fields.IntegerField(),
        'report_seq': fields.IntegerField(nullable=True),
        'heartbeat_topic': fields.StringField(nullable=True),
        'drivers': fields.ListOfObjectsField('HostDriver', default=[]),
    })
    obj_relationships = {'drivers': [('1.0', '1.0')]}

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('report_seq', None)
        if versionutils.convert_version_to_tuple(target_version) < (1, 2):
            primitive.pop('heartbeat_topic', None)
