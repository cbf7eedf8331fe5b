"""oslo.config: the options its generator lists, what its parser read.

``common/config_check.py`` tells the options of a config file that no
library registers (a misspelled option or section). It needs every option
of a namespace without registering them (``generator._list_opts``, what
``oslo-config-generator`` uses) and the sections and values read from the
files, with the file of each section (the parser's ``_namespace``): oslo.config
has no public interface for either.
"""

from oslo_config import generator

DISTRIBUTION = 'oslo.config'
PRIVATE_NAMES = ('_list_opts', '_namespace', '_parsed', '_sections_to_file')


def list_opts(namespaces):
    """``[(namespace, [(group, [opt, ...]), ...]), ...]`` of the entry
    points ``namespaces`` (``oslo.config.opts``), as the sample
    generator lists them; raises what a library's ``list_opts`` raises."""
    return generator._list_opts(namespaces)


def parsed_sections(conf):
    """``(section, {option: [values]})`` of every config file ``conf``
    parsed (none before it parsed any)."""
    namespace = conf._namespace
    for sections in (namespace._parsed if namespace else ()):
        yield from sections.items()


def file_of(conf, section):
    """The (last) config file ``conf`` parsed that has ``section``, or
    None."""
    namespace = conf._namespace
    return namespace._sections_to_file.get(section) if namespace else None
