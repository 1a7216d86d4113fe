"""An in-process Nova cloud with the plugin, for the demo and the functional tests.

It runs on Nova's own functional harness (``nova.tests.functional``, shipped
in the nova package): the real nova-api, conductor, scheduler and Placement
in one process, with fake-driver computes and SQLite databases. The harness
needs Nova's test dependencies: ``pip install 'hpc-nova-scheduler[demo]'``.
"""

# Nova's harness makes os.uname raise inside a test, and numpy calls it when
# first imported; the scheduler plugin (which uses numpy) is therefore
# imported here, before any cloud starts, rather than when Nova loads it.
from hpc_nova_scheduler.scheduler import placement_filter as _placement_filter  # noqa: F401
from hpc_nova_scheduler.scheduler import plan_weigher as _plan_weigher  # noqa: F401
