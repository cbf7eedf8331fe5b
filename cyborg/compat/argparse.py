"""argparse (Python's standard library): a parser's options by string.

``cli/app.py`` respells an option another library registered
(keystoneauth's ``--timeout``) and adds an option only when no plugin did:
argparse has no public way to find or rename a registered option; the
parser keeps them in ``_option_string_actions``.
"""

DISTRIBUTION = None  # the standard library: pinned by the Python versions
PRIVATE_NAMES = ('_option_string_actions',)


def has_option(parser, option):
    """Whether ``parser`` has the option string ``option``."""
    return option in parser._option_string_actions


def rename_option(parser, old, new):
    """Spell ``parser``'s option ``old`` as ``new``, keeping its
    destination; KeyError when it has no ``old``."""
    action = parser._option_string_actions.pop(old)
    action.option_strings = [new]
    parser._option_string_actions[new] = action
