"""SQLAlchemy models of the cyborg database.

Enumerated values (device types, states, attach types) are strings checked
by the versioned objects, not database enums: a new device type then needs
no schema migration (upstream needed five).
"""

from oslo_db.sqlalchemy import models
import sqlalchemy as sa
from sqlalchemy import orm

_TABLE_ARGS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


class Base(models.TimestampMixin, models.ModelBase, orm.DeclarativeBase):
    pass


def _uuid_col():
    return sa.Column(sa.String(36), nullable=False)


def _unique_uuid(table):
    return sa.UniqueConstraint('uuid', name='uniq_%s0uuid' % table)


class Host(Base):
    """A compute host running an agent: liveness and its last report."""

    __tablename__ = 'hosts'
    __table_args__ = (
        sa.UniqueConstraint('hostname', name='uniq_hosts0hostname'),
        # The liveness check: up hosts not seen since a time.
        sa.Index('hosts_status_last_seen_at_idx', 'status', 'last_seen_at'),
        # The periodic retry of Placement syncs.
        sa.Index('hosts_sync_pending_idx', 'sync_pending'),
        _TABLE_ARGS)

    id = sa.Column(sa.Integer, primary_key=True)
    hostname = sa.Column(sa.String(255), nullable=False)
    status = sa.Column(sa.String(16), nullable=False, default='up')
    endpoint = sa.Column(sa.String(255))
    version = sa.Column(sa.String(64))
    # The compute node provider's name in Placement, as the agent gave it
    # ([agent] resource_provider_name); NULL: the hostname.
    resource_provider_name = sa.Column(sa.String(255))
    last_seen_at = sa.Column(sa.DateTime, nullable=False)
    # The hash of the report the host's device rows show, written in the
    # transaction that writes them; NULL when they show no report exactly
    # (something it no longer lists is kept in use).
    report_hash = sa.Column(sa.String(64))
    # Bumped by every report that changed the host's device rows.
    report_generation = sa.Column(sa.Integer, nullable=False, default=0)
    # The report_generation Placement was last synced to in full; NULL:
    # Placement may not show the rows (a sync failed half-way).
    synced_generation = sa.Column(sa.Integer)
    # The sequence of the newest report the host's agent sent that was
    # applied or found applied: an older one that arrives late is refused.
    report_seq = sa.Column(sa.BigInteger)
    sync_pending = sa.Column(sa.Boolean, nullable=False, default=False,
                             server_default=sa.false())
    # Adopted from upstream Cyborg (``cyborg-dbsync adopt``) and not yet
    # confirmed by a report of our agent that found the same hardware: a
    # report that differs is not applied until the operator accepts it.
    adopted = sa.Column(sa.Boolean, nullable=False, default=False,
                        server_default=sa.false())
    # Who the agent that holds the host is (AgentHello.agent_id); NULL:
    # an agent that does not say (older than AgentHello 1.3).
    agent_id = sa.Column(sa.String(255))
    # When the conductor last wrote a report of the host (applied, or
    # its new sequence recorded); NULL: none since this column came.
    last_report_at = sa.Column(sa.DateTime)


class HostDriver(Base):
    """An accelerator driver as loaded by one host's agent."""

    __tablename__ = 'host_drivers'
    __table_args__ = (
        sa.UniqueConstraint('host_id', 'name',
                            name='uniq_host_drivers0host_id0name'),
        _TABLE_ARGS)

    id = sa.Column(sa.Integer, primary_key=True)
    host_id = sa.Column(sa.Integer,
                        sa.ForeignKey('hosts.id', ondelete='CASCADE'),
                        nullable=False)
    name = sa.Column(sa.String(255), nullable=False)
    device_type = sa.Column(sa.String(32))
    version = sa.Column(sa.String(64))
    status = sa.Column(sa.String(16), nullable=False)
    error = sa.Column(sa.Text)


class HostHardware(Base):
    """One function a driver of a host's agent looked at, offered or not,
    as the host's last report with a hardware list said."""

    __tablename__ = 'host_hardware'
    __table_args__ = (
        sa.UniqueConstraint('host_id', 'driver', 'address',
                            name='uniq_host_hardware0host_id0driver0address'),
        _TABLE_ARGS)

    id = sa.Column(sa.Integer, primary_key=True)
    host_id = sa.Column(sa.Integer,
                        sa.ForeignKey('hosts.id', ondelete='CASCADE'),
                        nullable=False)
    address = sa.Column(sa.String(255), nullable=False)
    vendor_id = sa.Column(sa.String(16))
    product_id = sa.Column(sa.String(16))
    name = sa.Column(sa.String(255))
    kernel_driver = sa.Column(sa.String(64))
    driver = sa.Column(sa.String(255), nullable=False)
    offered = sa.Column(sa.Boolean, nullable=False)
    reason = sa.Column(sa.Text)
    action = sa.Column(sa.Text)
    setup_required = sa.Column(sa.Boolean, nullable=False)
    reboot_required = sa.Column(sa.Boolean, nullable=False)


class Device(Base):
    __tablename__ = 'devices'
    __table_args__ = (
        _unique_uuid('devices'),
        sa.Index('devices_hostname_idx', 'hostname'),
        _TABLE_ARGS)

    id = sa.Column(sa.Integer, primary_key=True)
    uuid = _uuid_col()
    type = sa.Column(sa.String(32), nullable=False)
    vendor = sa.Column(sa.String(255), nullable=False)
    model = sa.Column(sa.String(255), nullable=False)
    std_board_info = sa.Column(sa.Text)
    vendor_board_info = sa.Column(sa.Text)
    hostname = sa.Column(sa.String(255), nullable=False)
    status = sa.Column(sa.String(32), nullable=False, default='enabled')


class ControlpathID(Base):
    __tablename__ = 'controlpath_ids'
    __table_args__ = (
        _unique_uuid('controlpath_ids'),
        sa.Index('controlpath_ids_device_id_idx', 'device_id'),
        _TABLE_ARGS)

    id = sa.Column(sa.Integer, primary_key=True)
    uuid = _uuid_col()
    device_id = sa.Column(sa.Integer, sa.ForeignKey('devices.id'),
                          nullable=False)
    cpid_type = sa.Column(sa.String(32), nullable=False)
    cpid_info = sa.Column(sa.String(255), nullable=False)


class Deployable(Base):
    __tablename__ = 'deployables'
    __table_args__ = (
        _unique_uuid('deployables'),
        sa.UniqueConstraint('name', name='uniq_deployables0name'),
        sa.Index('deployables_parent_id_idx', 'parent_id'),
        sa.Index('deployables_root_id_idx', 'root_id'),
        sa.Index('deployables_device_id_idx', 'device_id'),
        # The list's default order (newest first): a page is read from
        # the index, not sorted from the whole table.
        sa.Index('deployables_created_at_idx', 'created_at'),
        # A bind looks its deployable up by the provider Nova picked.
        sa.Index('deployables_rp_uuid_idx', 'rp_uuid'),
        _TABLE_ARGS)

    id = sa.Column(sa.Integer, primary_key=True)
    uuid = _uuid_col()
    parent_id = sa.Column(sa.Integer, sa.ForeignKey('deployables.id'))
    root_id = sa.Column(sa.Integer, sa.ForeignKey('deployables.id'))
    name = sa.Column(sa.String(255), nullable=False)
    num_accelerators = sa.Column(sa.Integer, nullable=False)
    device_id = sa.Column(sa.Integer, sa.ForeignKey('devices.id'),
                          nullable=False)
    rp_uuid = sa.Column(sa.String(36))
    driver_name = sa.Column(sa.String(100))
    bitstream_id = sa.Column(sa.String(36))


class Attribute(Base):
    __tablename__ = 'attributes'
    __table_args__ = (
        _unique_uuid('attributes'),
        sa.UniqueConstraint('deployable_id', 'key',
                            name='uniq_attributes0deployable_id0key'),
        _TABLE_ARGS)

    id = sa.Column(sa.Integer, primary_key=True)
    uuid = _uuid_col()
    deployable_id = sa.Column(sa.Integer, sa.ForeignKey('deployables.id'),
                              nullable=False)
    key = sa.Column(sa.String(255), nullable=False)
    value = sa.Column(sa.Text, nullable=False)


class AttachHandle(Base):
    __tablename__ = 'attach_handles'
    __table_args__ = (
        _unique_uuid('attach_handles'),
        sa.Index('attach_handles_cpid_id_idx', 'cpid_id'),
        sa.Index('attach_handles_deployable_id_idx', 'deployable_id'),
        _TABLE_ARGS)

    id = sa.Column(sa.Integer, primary_key=True)
    uuid = _uuid_col()
    deployable_id = sa.Column(sa.Integer, sa.ForeignKey('deployables.id'),
                              nullable=False)
    cpid_id = sa.Column(sa.Integer, sa.ForeignKey('controlpath_ids.id'),
                        nullable=False)
    in_use = sa.Column(sa.Boolean, nullable=False, default=False)
    attach_type = sa.Column(sa.String(32), nullable=False)
    attach_info = sa.Column(sa.String(255), nullable=False)


class DeviceProfile(Base):
    __tablename__ = 'device_profiles'
    __table_args__ = (
        _unique_uuid('device_profiles'),
        sa.UniqueConstraint('name', name='uniq_device_profiles0name'),
        _TABLE_ARGS)

    id = sa.Column(sa.Integer, primary_key=True)
    uuid = _uuid_col()
    name = sa.Column(sa.String(255), nullable=False)
    profile_json = sa.Column(sa.Text, nullable=False)
    description = sa.Column(sa.Text)


class ExtendedAcceleratorRequest(Base):
    __tablename__ = 'extended_accelerator_requests'
    __table_args__ = (
        _unique_uuid('extended_accelerator_requests'),
        sa.Index('extended_arqs_project_id_idx', 'project_id'),
        sa.Index('extended_arqs_device_profile_id_idx', 'device_profile_id'),
        sa.Index('extended_arqs_device_rp_uuid_idx', 'device_rp_uuid'),
        sa.Index('extended_arqs_instance_uuid_idx', 'instance_uuid'),
        sa.Index('extended_arqs_attach_handle_id_idx', 'attach_handle_id'),
        sa.Index('extended_arqs_deployable_id_idx', 'deployable_id'),
        sa.Index('extended_arqs_unconfirmed_idx', 'instance_confirmed',
                 'instance_checked_at'),
        sa.Index('extended_arqs_created_at_idx', 'created_at'),
        # The periodic checks: binds left behind, events Nova lacks.
        sa.Index('extended_arqs_state_idx', 'state'),
        sa.Index('extended_arqs_nova_notified_idx', 'nova_notified'),
        _TABLE_ARGS)

    id = sa.Column(sa.Integer, primary_key=True)
    uuid = _uuid_col()
    project_id = sa.Column(sa.String(255))
    state = sa.Column(sa.String(32), nullable=False, default='Initial')
    device_profile_id = sa.Column(sa.Integer,
                                  sa.ForeignKey('device_profiles.id'),
                                  nullable=False)
    device_profile_group_id = sa.Column(sa.Integer, nullable=False,
                                        default=0)
    hostname = sa.Column(sa.String(255))
    device_rp_uuid = sa.Column(sa.String(36))
    instance_uuid = sa.Column(sa.String(36))
    attach_handle_id = sa.Column(sa.Integer,
                                 sa.ForeignKey('attach_handles.id'))
    substate = sa.Column(sa.String(32), nullable=False, default='Initial')
    deployable_id = sa.Column(sa.Integer, sa.ForeignKey('deployables.id'))
    bind_conductor = sa.Column(sa.String(255))
    bind_started_at = sa.Column(sa.DateTime)
    nova_notified = sa.Column(sa.Boolean, nullable=False, default=False,
                              server_default=sa.false())
    # Nova showed the instance past its build: its own delete paths
    # release the ARQ (conductor/stuck_arqs.py).
    instance_confirmed = sa.Column(sa.Boolean, nullable=False, default=False,
                                   server_default=sa.false())
    instance_checked_at = sa.Column(sa.DateTime)


class Accelerator(Base):
    """An accelerator of the v1 API: a named view of one accelerator unit
    of a deployable (``unit``, 0 to ``num_accelerators - 1``; at most one
    accelerator per unit).

    ``spec_version`` grows with every change of the accelerator's spec, so
    concurrent writers are detected instead of overwriting each other.
    """

    __tablename__ = 'accelerators'
    __table_args__ = (
        _unique_uuid('accelerators'),
        sa.UniqueConstraint('name', name='uniq_accelerators0name'),
        sa.UniqueConstraint('deployable_id', 'unit',
                            name='uniq_accelerators0deployable_id0unit'),
        # The periodic expiry of provisioning claims.
        sa.Index('accelerators_state_idx', 'state'),
        _TABLE_ARGS)

    id = sa.Column(sa.Integer, primary_key=True)
    uuid = _uuid_col()
    name = sa.Column(sa.String(255), nullable=False)
    deployable_id = sa.Column(sa.Integer, sa.ForeignKey('deployables.id'))
    unit = sa.Column(sa.Integer)
    device_type = sa.Column(sa.String(32))
    acc_type = sa.Column(sa.String(255))
    acc_capability = sa.Column(sa.Text)
    vendor_id = sa.Column(sa.String(16))
    product_id = sa.Column(sa.String(16))
    remotable = sa.Column(sa.Integer, nullable=False, default=0)
    state = sa.Column(sa.String(32), nullable=False, default='requested')
    instance_uuid = sa.Column(sa.String(36))
    attached_host = sa.Column(sa.String(255))
    spec_version = sa.Column(sa.Integer, nullable=False, default=1)


class Adoption(Base):
    """An upstream Cyborg database adopted by ``cyborg-dbsync adopt``:
    which upstream revision, how many rows of each table were adopted
    (``counts``, JSON) and how many were left out."""

    __tablename__ = 'adoptions'
    __table_args__ = (_TABLE_ARGS,)

    id = sa.Column(sa.Integer, primary_key=True)
    source_revision = sa.Column(sa.String(32), nullable=False)
    source_release = sa.Column(sa.String(64), nullable=False)
    counts = sa.Column(sa.Text, nullable=False)
    rejected = sa.Column(sa.Integer, nullable=False, default=0)


class ConductorLease(Base):
    """Which conductor runs the periodic work that one conductor does
    for all (``name``), until when: another takes it over once
    ``expires_at`` has passed (``cyborg.conductor.leases``)."""

    __tablename__ = 'conductor_leases'
    __table_args__ = (_TABLE_ARGS,)

    name = sa.Column(sa.String(64), primary_key=True)
    holder = sa.Column(sa.String(255), nullable=False)
    expires_at = sa.Column(sa.DateTime, nullable=False)


class RPCNonce(Base):
    """The nonce of a signed RPC message that a conductor took, until
    the message is too old to be taken anyway (``expires_at``): another
    conductor, or this one restarted, refuses it
    (``cyborg.db.rpc_nonces``). Kept in memory on MySQL, unlogged on
    PostgreSQL (see its migration)."""

    __tablename__ = 'rpc_nonces'
    __table_args__ = (sa.Index('rpc_nonces_expires_at_idx', 'expires_at',
                               mysql_using='btree'),
                      _TABLE_ARGS)

    nonce = sa.Column(sa.String(64), primary_key=True)
    expires_at = sa.Column(sa.DateTime, nullable=False)
