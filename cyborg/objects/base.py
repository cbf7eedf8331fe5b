"""Base classes of cyborg's versioned objects."""

from oslo_versionedobjects import base as ovo_base

from cyborg.objects import fields


class CyborgObjectRegistry(ovo_base.VersionedObjectRegistry):
    pass


class CyborgObject(ovo_base.VersionedObject,
                   ovo_base.ComparableVersionedObject):
    """Base of every cyborg object; namespace ``cyborg_object``."""

    OBJ_SERIAL_NAMESPACE = 'cyborg_object'
    OBJ_PROJECT_NAMESPACE = 'cyborg'

    def as_dict(self):
        return {name: getattr(self, name) for name in self.fields
                if self.obj_attr_is_set(name)}

    @classmethod
    def from_db(cls, db_row, **extra):
        """An object with the fields of ``db_row`` (plus ``extra``)."""
        obj = cls()
        for name in cls.fields:
            if name in extra:
                setattr(obj, name, extra[name])
            elif hasattr(db_row, name):
                setattr(obj, name, getattr(db_row, name))
        obj.obj_reset_changes()
        return obj


class TimestampedObject:
    """Mixin for objects backed by a row with created/updated times."""

    fields = {
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }


class CyborgObjectSerializer(ovo_base.VersionedObjectSerializer):
    OBJ_BASE_CLASS = CyborgObject
