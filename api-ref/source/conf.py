"""Sphinx configuration of the API reference (tox -e api-ref)."""

project = 'cyborg API reference'
copyright = 'cyborg developers'
author = 'cyborg developers'

# os_api_ref: ".. rest_method::", ".. rest_parameters::" (from
# parameters.yaml) and ".. rest_status_code::", the format of OpenStack
# API references.
extensions = ['os_api_ref']

source_suffix = {'.rst': 'restructuredtext'}
root_doc = 'index'
exclude_patterns = ['_build']
pygments_style = 'sphinx'

html_theme = 'alabaster'
html_static_path = []
