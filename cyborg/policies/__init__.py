"""Policy defaults: base rules here, API rules one module per resource.

A resource adds ``cyborg/policies/<resource>.py`` with a ``list_rules()``
of ``DocumentedRuleDefault``s named ``cyborg:<resource>:<action>`` and
appends the module to ``_MODULES``. ``list_rules`` is the
``oslo.policy.policies`` entry point (namespace ``cyborg.api``).
"""

import itertools

from cyborg.policies import accelerator_requests
from cyborg.policies import accelerators
from cyborg.policies import attributes
from cyborg.policies import base
from cyborg.policies import deployables
from cyborg.policies import device_profiles
from cyborg.policies import devices
from cyborg.policies import operations

_MODULES = [
    base,
    device_profiles,
    accelerator_requests,
    deployables,
    devices,
    attributes,
    accelerators,
    operations,
]


def list_rules():
    """Every rule default of the API, base rules first."""
    return list(itertools.chain.from_iterable(
        module.list_rules() for module in _MODULES))
