"""prometheus_client: multiprocess mode turned on after import.

prometheus_client chooses the class of every value it counts when
``prometheus_client.values`` is imported: a value in memory, or in the
files of ``PROMETHEUS_MULTIPROC_DIR`` when that is set then. cyborg-api
knows whether it forks workers only once its config is read, after the
import; :func:`choose_value_class` has the module choose again, as it does
at import. ``values.ValueClass`` is no documented interface.
"""

from prometheus_client import values

DISTRIBUTION = 'prometheus-client'
PRIVATE_NAMES = ()
INTERNAL_NAMES = ('ValueClass',)


def choose_value_class():
    """The values made from now on are counted as the environment says
    now (``PROMETHEUS_MULTIPROC_DIR``)."""
    values.ValueClass = values.get_value_class()
