"""Shims: cyborg's only uses of other libraries' private names.

A name with a leading underscore (or an attribute a library does not
document, such as pecan's ``core.getargspec``) is its authors' to change
in any release. Where no public interface does what cyborg needs, the use
sits here, one module per library, behind functions and classes with
public names; each module says in ``PRIVATE_NAMES`` (and
``INTERNAL_NAMES``) what of its library it uses, and its test in
``cyborg/tests/unit/compat/`` fails when that behaves differently.
``requirements.txt`` caps each such library below its next major version.
``cyborg/tests/unit/test_private_names.py`` fails on any other use, naming
its file and line. See ``doc/source/contributor/library-internals.rst``.
"""

#: The shim modules, one per library.
SHIMS = ('amqp', 'argparse', 'cheroot', 'oslo_config', 'oslo_messaging',
         'oslo_middleware', 'osprofiler', 'pecan', 'prometheus', 'pymysql',
         'sqlalchemy')
