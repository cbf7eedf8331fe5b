"""Sphinx configuration of cyborg's release notes (tox -e releasenotes)."""

project = 'cyborg release notes'
copyright = 'cyborg developers'
author = 'cyborg developers'

# ".. release-notes::" collects the notes from git history and the work
# tree with reno.
extensions = ['reno.sphinxext']

source_suffix = {'.rst': 'restructuredtext'}
root_doc = 'index'
exclude_patterns = ['_build']
pygments_style = 'sphinx'

html_theme = 'alabaster'
html_static_path = []
