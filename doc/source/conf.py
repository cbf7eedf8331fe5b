"""Sphinx configuration of cyborg's documentation (tox -e docs)."""

import os
import sys

# Our own extensions.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '_ext'))

project = 'cyborg'
copyright = 'cyborg developers'
author = 'cyborg developers'

extensions = [
    # [DEFAULT] and every option group, read from the code:
    # ".. show-options::" in configuration/config.rst.
    'oslo_config.sphinxext',
    # Policy defaults, read from the code: ".. show-policy::" in
    # configuration/policy.rst.
    'oslo_policy.sphinxext',
    # Route -> method -> rule, read from cyborg/policies: ".. policy-routes::"
    # in configuration/policy-routes.rst.
    'policy_routes',
]

source_suffix = {'.rst': 'restructuredtext'}
root_doc = 'index'
exclude_patterns = ['_build']
pygments_style = 'sphinx'

html_theme = 'alabaster'
html_theme_options = {
    'description': 'Accelerator lifecycle management for OpenStack',
    'fixed_sidebar': True,
}
html_static_path = []
html_last_updated_fmt = '%Y-%m-%d'
