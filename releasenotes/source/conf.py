"""Sphinx configuration of the hpc-nova-scheduler release notes.

Build with ``tox -e releasenotes`` (or ``sphinx-build -W -b html
releasenotes/source releasenotes/build/html``); every warning is an error.
reno reads the notes in ``releasenotes/notes`` from the git history.
"""

extensions = ["reno.sphinxext"]

project = "hpc-nova-scheduler release notes"
copyright = "hpc-nova-scheduler developers"
html_theme = "alabaster"
master_doc = "index"
exclude_patterns = ["_build"]
highlight_language = "none"
