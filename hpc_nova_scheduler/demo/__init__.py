"""An in-process Nova cloud with the plugin, for the demo and the functional tests.

It runs on Nova's own functional harness (``nova.tests.functional``, shipped
in the nova package): the real nova-api, conductor, scheduler and Placement
in one process, with fake-driver computes and SQLite databases. The harness
needs Nova's test dependencies: ``pip install 'hpc-nova-scheduler[demo]'``.

The package itself imports nothing of Nova: ``demo --topology`` checks its
value with :mod:`.topology` before Nova loads (or warns of eventlet).
"""
