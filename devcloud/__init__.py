"""A real OpenStack control plane on one machine, for trials and stress.

``tools/cloud.py`` drives it: Placement, Glance and the Nova API behind
gunicorn, nova-conductor, nova-scheduler with several workers and
nova-compute processes on Nova's fake driver, each a process of its own,
on MariaDB and RabbitMQ, set up with the commands an operator runs. Nothing
here runs inside nova-scheduler; the plugin is tried through it.

This is developer tooling: it lives at the top of the source tree, next to
``tests/`` and ``benchmarks/``, and is not part of the installed package
(an operator's nova-scheduler host has no use for it).
"""

from pathlib import Path

#: The source tree holding this package. Being uninstalled, ``devcloud`` is
#: importable only from here: the WSGI servers that load its applications are
#: pointed at it, and runs are kept in its ``.cloud/`` by default.
SOURCE_TREE = Path(__file__).resolve().parent.parent
