"""oslo.middleware: a configurable middleware's option.

``ConfigurableMiddleware._conf_get`` reads an option from the paste
deploy settings of the filter, or else from oslo.config's
``[oslo_middleware]`` group: a subclass (``api/middleware/body_size.py``)
reads its option as the parent middleware does. There is no public
accessor.
"""

DISTRIBUTION = 'oslo.middleware'
PRIVATE_NAMES = ('_conf_get',)


def option(middleware, name, group='oslo_middleware'):
    """The value of option ``name`` for ``middleware`` (an
    ``oslo_middleware.base.ConfigurableMiddleware``), as it reads it."""
    return middleware._conf_get(name, group=group)
