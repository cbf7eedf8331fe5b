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
import difflib
from importlib import metadata as importlib_metadata
import io
import re
import sys

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log as logging

from cyborg.compat import oslo_config as config_compat
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
    """Raise :class:`ConfigError` naming the first misspelled group
    (:func:`misspelled_groups`) or bad value."""
    misspelled = misspelled_groups(conf)
    if misspelled:
        raise ConfigError(_and_more(describe_misspelled(misspelled[0]),
                                    len(misspelled) - 1))
    problems = bad_values(conf)
    if problems:
        raise ConfigError(_and_more(problems[0], len(problems) - 1))


def _and_more(line, extra):
    return line + (' (and %d more)' % extra if extra else '')


#: ``known_options()`` of each tuple of namespaces, loaded once.
_KNOWN = {}


def known_options(namespaces=None):
    """``{group: {option names}}`` of the option namespaces (group
    names may be patterns such as ``vgpu_<type>``, and include the old
    names of deprecated groups); a namespace whose library is not
    installed is left out. Loaded once per process."""
    namespaces = tuple(conf_opts.NAMESPACES if namespaces is None
                       else namespaces)
    if namespaces not in _KNOWN:
        known = {}
        for namespace in namespaces:
            try:
                listings = config_compat.list_opts([namespace])
            except Exception as e:  # a library that fails to import
                LOG.debug('Option namespace %s not loaded: %s', namespace,
                          e)
                continue
            _add_listing(known, listings)
        _KNOWN[namespaces] = known
    return {group: set(names) for group, names in _KNOWN[namespaces].items()}


def _add_listing(known, listings):
    """Add the generator's ``[(namespace, [(group, opts)])]`` to
    ``known``."""
    for _namespace, listing in listings:
        for group, opts in listing:
            name = getattr(group, 'name', group) or 'DEFAULT'
            names = known.setdefault(name, set())
            for opt in opts:
                names.update(_spellings(opt, name))
                for old in opt.deprecated_opts:
                    if old.group not in (None, name, 'DEFAULT'):
                        known.setdefault(old.group, set()).add(
                            old.name or opt.dest)


def _spellings(opt, group):
    """The names a config file may use for ``opt`` (deprecated included)."""
    names = {opt.name, opt.dest}
    for old in opt.deprecated_opts:
        if old.group in (None, group, 'DEFAULT') and old.name:
            names.update({old.name, old.name.replace('-', '_')})
    return names


def _is_pattern(group):
    return '<' in group


def _group_options(known, group):
    """The known options of ``group``, with those of every pattern group
    it matches (``vgpu_<type>`` for ``vgpu_nvidia-35``; ``<nic_type>``
    matches any name); None if it matches nothing."""
    matched = [names for pattern, names in known.items()
               if pattern == group or _is_pattern(pattern) and re.fullmatch(
                   re.sub(r'<[^>]*>', '.+', re.escape(pattern)), group)]
    return set().union(*matched) if matched else None


def _plugin_options(conf, group):
    """The options of the keystoneauth plugin that ``[group] auth_type``
    names in the files, which only that plugin's users set."""
    auth_type = None
    for section, options in _parsed_sections(conf):
        if _normal(section) == group and options.get('auth_type'):
            auth_type = options['auth_type'][-1]
    if not auth_type or auth_type not in auth_plugin_names():
        # None, or an unknown plugin: the daemon that uses it says so.
        return set()
    try:
        opts = ks_loading.get_auth_plugin_conf_options(auth_type)
    except Exception:  # an unknown plugin: keystoneauth says so later
        return set()
    return {name for opt in opts for name in (opt.name, opt.dest)}


def auth_plugin_names():
    """The names of keystoneauth's plugins (entry points
    ``keystoneauth1.plugin``), none of them loaded: looking one up by a
    name that is none, or loading them all, logs errors on stderr."""
    return frozenset(entry.name for entry in importlib_metadata.entry_points(
        group='keystoneauth1.plugin'))


class Unknown(tuple):
    """``(group, option)`` set in a config file and known to no
    namespace (``option`` None: the whole group), with ``file``, the file
    that sets it, and ``nearest``, the known name closest to it (None if
    none is close, for an option)."""

    def __new__(cls, group, option, file=None, nearest=None):
        self = super().__new__(cls, (group, option))
        self.file = file
        self.nearest = nearest
        return self


def unknown_options(conf, known=None):
    """An :class:`Unknown` ``(group, option or None)`` for each option
    (or whole group) set in the parsed config files that no namespace
    knows.

    What this process registered needs no look further; the rest is
    looked up in the namespaces (``known``, default
    :func:`known_options`), which loads the libraries that own them: a
    config file that sets only what the daemon uses loads nothing more.
    A group that only a pattern matches (any name may be a NIC type's
    ``[<nic_type>]``) and that sets none of that pattern's options is
    unknown as a whole.
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
        found.extend(_unknown_in(conf, known, section, leftovers))
    return list(dict.fromkeys(found))


def _unknown_in(conf, known, section, leftovers):
    """The :class:`Unknown` entries of ``section``, whose options
    ``leftovers`` this process did not register."""
    group = _normal(section)
    where = _file_of(conf, section)
    names = _group_options(known, group)
    if names is not None:
        names = names | _plugin_options(conf, group)
    if names is None or group not in known and not any(
            option in names for option in leftovers):
        groups = [name for name in known if not _is_pattern(name)]
        return [Unknown(section, None, where,
                        near_miss(group, groups) or _closest(group, groups))]
    return [Unknown(section, option, where,
                    _closest(option, names, cutoff=0.75))
            for option in leftovers if option not in names]


def misspelled_groups(conf, known=None):
    """The unknown whole groups (:func:`unknown_options`) whose name is
    a near miss (:func:`near_miss`) of a group cyborg knows: every option
    in them is one the operator meant to set and that would be ignored
    (a ``[databse]`` left the database at its default, an empty SQLite
    file)."""
    return [entry for entry in unknown_options(conf, known)
            if entry[1] is None and entry.nearest
            and near_miss(_normal(entry[0]), [entry.nearest])]


def describe_misspelled(entry):
    """One line on a misspelled group of :func:`misspelled_groups`."""
    return ('%s: [%s] is not a group cyborg knows: did you mean [%s]? Its '
            'options are not read until it is renamed'
            % (entry.file or 'the configuration', entry[0], entry.nearest))


def _squashed(name):
    return re.sub(r'[-_]', '', name.lower())


def _allowed_edits(length):
    """How many edits still make a near miss of a name ``length``
    characters long: none below 5 (``[pci]`` and ``[api]`` are both
    names of their own), one below 9, then two."""
    return 0 if length < 5 else 1 if length < 9 else 2


def near_miss(name, candidates):
    """The candidate (not a pattern) that ``name`` is a misspelling of,
    or None: the same name in another case or with ``-`` or ``_`` added
    or dropped, or a few edits away (:func:`_allowed_edits`, a swap of
    two neighbours counting as one) from a name long enough that such a
    slip is not another word."""
    best = None
    for candidate in sorted(candidates):
        if _is_pattern(candidate) or candidate == name:
            continue
        if _squashed(candidate) == _squashed(name):
            return candidate
        edits = edit_distance(name.lower(), candidate.lower())
        if edits <= _allowed_edits(min(len(name), len(candidate))) and (
                best is None or edits < best[0]):
            best = (edits, candidate)
    return best[1] if best else None


def edit_distance(a, b):
    """Insertions, deletions, substitutions and swaps of neighbours that
    turn ``a`` into ``b`` (the optimal string alignment distance)."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1,
                         rows[-1][j - 1] + cost)
            if (i > 1 and j > 1 and a[i - 1] == b[j - 2]
                    and a[i - 2] == b[j - 1]):
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def _closest(name, candidates, cutoff=0.0):
    """The candidate most like ``name`` (difflib's ratio), None if none
    reaches ``cutoff``."""
    matches = difflib.get_close_matches(name, sorted(candidates), n=1,
                                        cutoff=cutoff)
    return matches[0] if matches else None


def _normal(section):
    """A section's group as oslo.config reads it: ``DEFAULT``, or the
    name in lower case."""
    return section if section == 'DEFAULT' else section.lower()


def _registered(conf, section):
    """The options registered on ``conf`` in group ``section``."""
    if section == 'DEFAULT':
        return set(conf)
    try:
        group = conf[_normal(section)]
    except (cfg.Error, ValueError):
        return set()
    return set(group) if isinstance(group, cfg.ConfigOpts.GroupAttr) else set()


def _parsed_sections(conf):
    """``(section, {option: [values]})`` of every parsed config file."""
    return config_compat.parsed_sections(conf)


def _file_of(conf, section):
    """The (last) config file that has ``section``."""
    return config_compat.file_of(conf, section)


def describe_unknown(found):
    """One line naming the unknown options and groups, where they are
    set and the known name each is closest to."""
    return ', '.join(_describe(entry) for entry in found)


def _describe(entry):
    group, option = entry
    where = getattr(entry, 'file', None)
    nearest = getattr(entry, 'nearest', None)
    where = ' in %s' % where if where else ''
    if option is None:
        return '[%s]%s%s' % (group, where, (
            ' (a group cyborg does not know; the nearest it knows is [%s])'
            % nearest if nearest else ''))
    return '[%s] %s%s%s' % (group, option, where, (
        ' (did you mean %s?)' % nearest if nearest else ''))
