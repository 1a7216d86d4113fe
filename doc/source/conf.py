"""Sphinx configuration of the hpc-nova-scheduler documentation.

Build with ``tox -e docs`` (or ``sphinx-build -W -b html doc/source
doc/build/html``); every warning is an error.
"""

import os
import sys

# The small extensions of this project: the extra-spec reference and the
# command's parsers made safe for reStructuredText.
sys.path.insert(0, os.path.abspath("../ext"))
# ``program-output`` runs the commands installed next to the Python that
# runs Sphinx, whether or not that environment is activated.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")

extensions = [
    "oslo_config.sphinxext",
    "oslo_config.sphinxconfiggen",
    "sphinxarg.ext",
    "sphinxcontrib.programoutput",
    "extra_specs",
]

project = "hpc-nova-scheduler"
copyright = "hpc-nova-scheduler developers"
# Sphinx's own theme: the plugin is not an OpenStack Foundation project, so
# openstackdocstheme's branding and Launchpad links would mislead.
html_theme = "alabaster"
master_doc = "index"
exclude_patterns = ["_build"]
# Literal blocks are shell sessions and configuration, not Python.
highlight_language = "none"

# oslo_config.sphinxconfiggen writes the sample configuration file from the
# same generator configuration as ``tox -e genconfig``.
config_generator_config_file = "../../etc/oslo-config-generator/hpc-nova-scheduler.conf"
sample_config_basename = "_static/hpc-nova-scheduler"
