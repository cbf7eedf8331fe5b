"""The configuration, checked before a daemon starts anything.

A console script parses its command line and config files with
:func:`parse`; a missing or unreadable file, an INI syntax error or a bad
command line value becomes a :class:`ConfigError`, one line that names the
file or the option. :func:`bad_values` then reads every registered option,
so a bad value in a file is found now, not after the API listens, and
:func:`unknown_options` names the options and groups of the files that no
library cyborg uses knows: oslo.config's generator lists them from the
same entry points as ``oslo-config-generator`` and
``oslo-config-validator`` (:data:`cyborg.conf.opts.NAMESPACES`), and
keystoneauth adds the options of the auth plugin a group names.
"""

import contextlib
import io
import re
import sys

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_config import generator
from oslo_log import log as logging

from cyborg.conf import opts as conf_opts

LOG = logging.getLogger(__name__)

#: The exit status of a console script whose configuration is wrong (as
#: argparse's for a bad command line).
EXIT_STATUS = 2


class ConfigError(Exception):
    """A configuration mistake, said in one line."""


def parse(conf, args, **kwargs):
    """``conf(args, **kwargs)``, with its file and command line errors
    as :class:`ConfigError`. argparse's own errors (an unknown option,
    ``--help``) still exit as argparse does."""
    try:
        _call(conf, args, **kwargs)
    except cfg.ConfigFilesNotFoundError as e:
        raise ConfigError('--config-file %s: no such file'
                          % ', '.join(e.config_files)) from None
    except cfg.ConfigFilesPermissionDeniedError as e:
        raise ConfigError('--config-file %s: permission denied'
                          % ', '.join(e.config_files)) from None
    except cfg.ConfigFileParseError as e:
        raise ConfigError('%s: %s' % (e.config_file, _no_path(e))) from None
    except cfg.ConfigDirNotFoundError as e:
        raise ConfigError('--config-dir %s: no such directory'
                          % e.config_dir) from None


def _call(conf, args, **kwargs):
    """``conf(args, **kwargs)``; a bad command line value, which
    oslo.config reports on stderr ("argument --port: Invalid ...") before
    it exits 1, as a :class:`ConfigError`."""
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            conf(args, **kwargs)
    except SystemExit as e:
        text = said.getvalue()
        if e.code == 1 and text.startswith('argument '):
            raise ConfigError(text.strip()) from None
        sys.stderr.write(text)
        raise
    sys.stderr.write(said.getvalue())


def _no_path(error):
    """The reason of a parse error, without the path said twice."""
    return str(error.msg).replace('at %s:' % error.config_file, 'line ')


def bad_values(conf):
    """One line per option whose configured value is not valid: its
    group, name, where it was set and why it is wrong."""
    problems = []
    for name in conf:
        value = _read(conf, None, name, problems)
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            for opt_name in value:
                _read(conf, name, opt_name, problems)
    return problems


def _read(conf, group, name, problems):
    """The value of ``[group] name`` (a GroupAttr for a group); a line
    added to ``problems`` when it is not valid."""
    try:
        return (conf[group] if group else conf)[name]
    except (cfg.ConfigSourceValueError, cfg.TemplateSubstitutionError,
            cfg.NoSuchOptError) as e:  # the last: a "$name" of nothing
        problems.append(_value_problem(group, name, e))
    return None


# How oslo.config says where a bad value comes from and why it is bad.
_VALUE_ERROR = re.compile(r"detail='(?P<where>[^']*)'\) is not valid: "
                          r"(?P<why>.*)$", re.DOTALL)


def _value_problem(group, name, error):
    option = '[%s] %s' % (group or 'DEFAULT', name)
    match = _VALUE_ERROR.search(str(error))
    if match is None:
        return '%s: %s' % (option, error)
    return '%s in %s: %s' % (option, match.group('where'),
                             match.group('why'))


def check(conf):
    """Raise :class:`ConfigError` naming the first bad value."""
    problems = bad_values(conf)
    if problems:
        extra = len(problems) - 1
        raise ConfigError(problems[0] + (' (and %d more)' % extra
                                         if extra else ''))


def known_options(namespaces=None):
    """``{group: {option names}}`` of the option namespaces (group
    names may be patterns such as ``vgpu_<type>``); a namespace whose
    library is not installed is left out."""
    namespaces = conf_opts.NAMESPACES if namespaces is None else namespaces
    known = {}
    for namespace in namespaces:
        try:
            listings = generator._list_opts([namespace])
        except Exception as e:  # a library that fails to import
            LOG.debug('Option namespace %s not loaded: %s', namespace, e)
            continue
        _add_listing(known, listings)
    return known


def _add_listing(known, listings):
    """Add the generator's ``[(namespace, [(group, opts)])]`` to
    ``known``."""
    for _namespace, listing in listings:
        for group, opts in listing:
            names = known.setdefault(getattr(group, 'name', group)
                                     or 'DEFAULT', set())
            for opt in opts:
                names.update(_spellings(opt, getattr(group, 'name', group)))


def _spellings(opt, group):
    """The names a config file may use for ``opt`` (deprecated included)."""
    names = {opt.name, opt.dest}
    for old in opt.deprecated_opts:
        if old.group in (None, group, 'DEFAULT') and old.name:
            names.update({old.name, old.name.replace('-', '_')})
    return names


def _group_options(known, group):
    """The known options of ``group``, with those of every pattern group
    it matches (``vgpu_<type>`` for ``vgpu_nvidia-35``; ``<nic_type>``
    matches any name); None if it matches nothing."""
    matched = [names for pattern, names in known.items()
               if pattern == group or '<' in pattern and re.fullmatch(
                   re.sub(r'<[^>]*>', '.+', re.escape(pattern)), group)]
    return set().union(*matched) if matched else None


def _plugin_options(conf, group):
    """The options of the keystoneauth plugin that ``[group] auth_type``
    names in the files, which only that plugin's users set."""
    auth_type = None
    for section, options in _parsed_sections(conf):
        if section == group and options.get('auth_type'):
            auth_type = options['auth_type'][-1]
    if not auth_type:
        return set()
    try:
        opts = ks_loading.get_auth_plugin_conf_options(auth_type)
    except Exception:  # an unknown plugin: keystoneauth says so later
        return set()
    return {name for opt in opts for name in (opt.name, opt.dest)}


def unknown_options(conf, known=None):
    """``(group, option or None)`` for each option (or whole group) set in
    the parsed config files that no namespace knows, in file order.

    What this process registered needs no look further; the rest is
    looked up in the namespaces (``known``, default
    :func:`known_options`), which loads the libraries that own them: a
    config file that sets only what the daemon uses loads nothing more.
    """
    found = []
    for section, options in _parsed_sections(conf):
        registered = _registered(conf, section)
        leftovers = [option for option in options
                     if option not in registered]
        if not leftovers:
            continue
        if known is None:
            known = known_options()
        names = _group_options(known, section)
        if names is None:
            found.append((section, None))
            continue
        names = names | _plugin_options(conf, section)
        found.extend((section, option) for option in leftovers
                     if option not in names)
    return list(dict.fromkeys(found))


def _registered(conf, section):
    """The options registered on ``conf`` in group ``section``."""
    if section == 'DEFAULT':
        return set(conf)
    try:
        group = conf[section]
    except (cfg.Error, ValueError):
        return set()
    return set(group) if isinstance(group, cfg.ConfigOpts.GroupAttr) else set()


def _parsed_sections(conf):
    """``(section, {option: [values]})`` of every parsed config file."""
    namespace = conf._namespace
    for sections in (namespace._parsed if namespace else ()):
        yield from sections.items()


def describe_unknown(found):
    """One line naming the unknown options and groups."""
    return ', '.join('[%s]' % group if option is None
                     else '[%s] %s' % (group, option)
                     for group, option in found)
