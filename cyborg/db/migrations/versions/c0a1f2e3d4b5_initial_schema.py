"""Initial schema: every table of cyborg.db.models.

Creates, parents first: hosts and their drivers; devices, their control
path ids, deployables with their attributes and attach handles; device
profiles and the accelerator requests (ARQs) made from them; and the v1
API's accelerators. Every table has an integer ``id`` key and the
``created_at``/``updated_at`` timestamps of oslo.db's TimestampMixin;
resources with a uuid also get ``uniq_<table>0uuid``.

Revision ID: c0a1f2e3d4b5
Revises: (none)
"""

from alembic import op
import sqlalchemy as sa

revision = 'c0a1f2e3d4b5'
down_revision = None
branch_labels = None
depends_on = None

# The same table options as the models: InnoDB so MySQL enforces the
# foreign keys, utf8mb4 so names may hold any character.
_TABLE_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def _create_table(name, *items):
    """Create ``name`` with the columns every table shares around ``items``."""
    op.create_table(
        name,
        sa.Column('id', sa.Integer, primary_key=True),
        *items,
        sa.Column('created_at', sa.DateTime),
        sa.Column('updated_at', sa.DateTime),
        **_TABLE_OPTIONS)


def _uuid(table):
    """The uuid column and its unique constraint, named as in the models."""
    return (sa.Column('uuid', sa.String(36), nullable=False),
            sa.UniqueConstraint('uuid', name='uniq_%s0uuid' % table))


def _reference(name, target, nullable=False, **fk_options):
    """An integer column pointing at ``target``'s id."""
    return sa.Column(name, sa.Integer,
                     sa.ForeignKey('%s.id' % target, **fk_options),
                     nullable=nullable)


def _string(name, length, nullable=True):
    return sa.Column(name, sa.String(length), nullable=nullable)


def _text(name, nullable=True):
    return sa.Column(name, sa.Text, nullable=nullable)


def _create_hosts():
    _create_table(
        'hosts',
        _string('hostname', 255, nullable=False),
        _string('status', 16, nullable=False),
        _string('endpoint', 255),
        _string('version', 64),
        sa.Column('last_seen_at', sa.DateTime, nullable=False),
        _string('report_hash', 64),
        sa.Column('report_generation', sa.Integer, nullable=False),
        sa.UniqueConstraint('hostname', name='uniq_hosts0hostname'))
    _create_table(
        'host_drivers',
        _reference('host_id', 'hosts', ondelete='CASCADE'),
        _string('name', 255, nullable=False),
        _string('device_type', 32),
        _string('version', 64),
        _string('status', 16, nullable=False),
        _text('error'),
        sa.UniqueConstraint('host_id', 'name',
                            name='uniq_host_drivers0host_id0name'))


def _create_devices():
    _create_table(
        'devices',
        *_uuid('devices'),
        _string('type', 32, nullable=False),
        _string('vendor', 255, nullable=False),
        _string('model', 255, nullable=False),
        _text('std_board_info'),
        _text('vendor_board_info'),
        _string('hostname', 255, nullable=False),
        _string('status', 32, nullable=False),
        sa.Index('devices_hostname_idx', 'hostname'))
    _create_table(
        'controlpath_ids',
        *_uuid('controlpath_ids'),
        _reference('device_id', 'devices'),
        _string('cpid_type', 32, nullable=False),
        _string('cpid_info', 255, nullable=False),
        sa.Index('controlpath_ids_device_id_idx', 'device_id'))


def _create_deployables():
    _create_table(
        'deployables',
        *_uuid('deployables'),
        _reference('parent_id', 'deployables', nullable=True),
        _reference('root_id', 'deployables', nullable=True),
        _string('name', 255, nullable=False),
        sa.Column('num_accelerators', sa.Integer, nullable=False),
        _reference('device_id', 'devices'),
        _string('rp_uuid', 36),
        _string('driver_name', 100),
        _string('bitstream_id', 36),
        sa.UniqueConstraint('name', name='uniq_deployables0name'),
        sa.Index('deployables_parent_id_idx', 'parent_id'),
        sa.Index('deployables_root_id_idx', 'root_id'),
        sa.Index('deployables_device_id_idx', 'device_id'))
    _create_table(
        'attributes',
        *_uuid('attributes'),
        _reference('deployable_id', 'deployables'),
        _string('key', 255, nullable=False),
        _text('value', nullable=False),
        sa.UniqueConstraint('deployable_id', 'key',
                            name='uniq_attributes0deployable_id0key'))
    _create_table(
        'attach_handles',
        *_uuid('attach_handles'),
        _reference('deployable_id', 'deployables'),
        _reference('cpid_id', 'controlpath_ids'),
        sa.Column('in_use', sa.Boolean, nullable=False),
        _string('attach_type', 32, nullable=False),
        _string('attach_info', 255, nullable=False),
        sa.Index('attach_handles_cpid_id_idx', 'cpid_id'),
        sa.Index('attach_handles_deployable_id_idx', 'deployable_id'))


def _create_device_profiles_and_arqs():
    _create_table(
        'device_profiles',
        *_uuid('device_profiles'),
        _string('name', 255, nullable=False),
        _text('profile_json', nullable=False),
        _text('description'),
        sa.UniqueConstraint('name', name='uniq_device_profiles0name'))
    _create_table(
        'extended_accelerator_requests',
        *_uuid('extended_accelerator_requests'),
        _string('project_id', 255),
        _string('state', 32, nullable=False),
        _reference('device_profile_id', 'device_profiles'),
        sa.Column('device_profile_group_id', sa.Integer, nullable=False),
        _string('hostname', 255),
        _string('device_rp_uuid', 36),
        _string('instance_uuid', 36),
        _reference('attach_handle_id', 'attach_handles', nullable=True),
        _string('substate', 32, nullable=False),
        _reference('deployable_id', 'deployables', nullable=True),
        sa.Index('extended_arqs_project_id_idx', 'project_id'),
        sa.Index('extended_arqs_device_profile_id_idx', 'device_profile_id'),
        sa.Index('extended_arqs_device_rp_uuid_idx', 'device_rp_uuid'),
        sa.Index('extended_arqs_instance_uuid_idx', 'instance_uuid'),
        sa.Index('extended_arqs_attach_handle_id_idx', 'attach_handle_id'),
        sa.Index('extended_arqs_deployable_id_idx', 'deployable_id'))


def _create_accelerators():
    _create_table(
        'accelerators',
        *_uuid('accelerators'),
        _string('name', 255, nullable=False),
        _reference('deployable_id', 'deployables', nullable=True),
        _string('device_type', 32),
        _string('acc_type', 255),
        _text('acc_capability'),
        _string('vendor_id', 16),
        _string('product_id', 16),
        sa.Column('remotable', sa.Integer, nullable=False),
        _string('state', 32, nullable=False),
        _string('instance_uuid', 36),
        _string('attached_host', 255),
        sa.Column('spec_version', sa.Integer, nullable=False),
        sa.UniqueConstraint('name', name='uniq_accelerators0name'),
        sa.Index('accelerators_deployable_id_idx', 'deployable_id'))


def upgrade():
    _create_hosts()
    _create_devices()
    _create_deployables()
    _create_device_profiles_and_arqs()
    _create_accelerators()
