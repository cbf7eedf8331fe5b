"""The shell commands the documentation shows, read from its rst source.

A command is found in a literal block (a paragraph ending in ``::``, or
a ``code-block`` of a shell language):

* a line starting with the prompt ``$ `` is a command, and so are the
  lines after it that bash needs to complete it (a ``\\`` at the end, an
  open quote); the other lines of such a block are its output;
* in a block without prompts whose first word is a program (one on
  ``PATH``, a path such as ``tools/aio``, a shell builtin, or a tool of
  ``ELSEWHERE`` that runs on production hosts only), every line is a
  command, completed the same way; lines starting with ``#`` are
  comments.

Other blocks (configuration, output, JSON, logs) hold no command.

Prose names commands too, as inline literals (````cyborg host-list````):
``inline_commands`` finds those of ``cyborg`` and ``openstack
accelerator``, whose names the test checks against the installed ones.
"""

import collections
import glob
import os
import re
import shlex
import shutil
import subprocess

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
PAGES = ('doc/source/**/*.rst', 'README.rst')
PROMPT = '$ '
SHELL_LANGUAGES = ('console', 'bash', 'shell', 'sh', 'shell-session')
BUILTINS = ('export', 'cd', 'source', '.', 'echo', 'for', 'if', 'set')
# Programs the pages show that are not installed where the tests run:
# they belong to a production host or to hardware.
ELSEWHERE = ('fpgaconf', 'xbmgmt', 'rabbitmqctl', 'mysql', 'useradd',
             'install', 'systemctl', 'reno', 'tox', 'psql', 'uwsgi')
_ASSIGNMENT = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*=')
_CODE_BLOCK = re.compile(r'^(\s*)\.\. (?:code-block|code|sourcecode)::\s*'
                         r'(\S*)\s*$')
_FUNCTION = re.compile(r'^[A-Za-z_][\w-]*\(\)\s*\{?$')

Command = collections.namedtuple('Command', 'page line text')


def pages():
    """The rst files of the documentation, relative to the top."""
    found = []
    for pattern in PAGES:
        found.extend(glob.glob(os.path.join(TOP, pattern), recursive=True))
    return sorted(os.path.relpath(path, TOP) for path in found)


def _indent(line):
    return len(line) - len(line.lstrip())


def _block(lines, start, base):
    """The lines of the literal block after line ``start`` (indented
    deeper than ``base``), dedented; and the index after it."""
    i = start + 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or _indent(lines[i]) <= base:
        return [], start + 1
    indent, first, block = _indent(lines[i]), i, []
    while i < len(lines) and (not lines[i].strip()
                              or _indent(lines[i]) >= indent):
        block.append(lines[i][indent:])
        i += 1
    return block, first


def literal_blocks(text):
    """(first line number, language or None, lines) of each literal
    block of an rst text."""
    lines = text.split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = _CODE_BLOCK.match(line)
        literal = (line.rstrip().endswith('::') and
                   not line.lstrip().startswith('.. '))
        if directive or literal:
            block, first = _block(lines, i, _indent(line))
            # Options of a directive (":linenos:") come first.
            while block and directive and block[0].startswith(':'):
                block.pop(0)
                first += 1
            if block:
                yield (first + 1, directive.group(2) if directive else None,
                       block)
                i = first + len(block)
                continue
        i += 1


def complete(text):
    """True when bash reads ``text`` as whole commands."""
    if text.rstrip().endswith('\\'):
        return False
    result = subprocess.run(['bash', '-n', '-c', text], capture_output=True,
                            timeout=30)
    return result.returncode == 0


def first_word(line):
    """The program a command line runs (after any VAR=value)."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        words = line.split()
    for word in words:
        if not _ASSIGNMENT.match(word):
            return word
    return words[0] if words else ''


def is_program(word, path=None):
    return (word in BUILTINS or word in ELSEWHERE or '/' in word
            or shutil.which(word, path=path) is not None)


def _logical(lines, start):
    """The command starting at ``lines[start]`` with the lines bash needs
    to complete it; and the index after it."""
    text, i = lines[start], start + 1
    while not complete(text) and i < len(lines):
        text += '\n' + lines[i]
        i += 1
    return text, i


def block_commands(block, path=None):
    """(offset in the block, command text) of the commands of a block."""
    prompted = any(line.startswith(PROMPT) for line in block)
    found, i = [], 0
    if not prompted:
        words = [first_word(line) for line in block if line.strip()
                 and not line.lstrip().startswith('#')]
        if not words or not (is_program(words[0], path)
                             or _FUNCTION.match(words[0])):
            return []
    while i < len(block):
        line = block[i]
        if prompted and not line.startswith(PROMPT):
            i += 1
            continue
        if not prompted and (not line.strip() or line.startswith('#')):
            i += 1
            continue
        lines = [line[len(PROMPT):] if prompted else line] + block[i + 1:]
        text, used = _logical(lines, 0)
        found.append((i, text))
        i += used
    return found


def commands(path=None):
    """Every command of every page, in page order."""
    found = []
    for page in pages():
        with open(os.path.join(TOP, page)) as f:
            text = f.read()
        for line, language, block in literal_blocks(text):
            if language not in (None, '') + SHELL_LANGUAGES:
                continue
            for offset, command in block_commands(block, path):
                found.append(Command(page, line + offset, command))
    return found


_INLINE = re.compile(r'``((?:cyborg|openstack accelerator)\s[^`]+)``')


def inline_commands():
    """(page, text) of every inline literal naming a ``cyborg`` or
    ``openstack accelerator`` command, its whitespace made single."""
    found = []
    for page in pages():
        with open(os.path.join(TOP, page)) as f:
            text = f.read()
        for match in _INLINE.finditer(text):
            found.append((page, ' '.join(match.group(1).split())))
    return found
