# Nova's harness runs its services in eventlet green threads; libraries such
# as oslo.db keep per-thread state that must be created after the patching.
# So patch here, before any test module is imported, whichever subset runs
# (as nova/tests/__init__.py does): patched late, mid-import, the unit tests
# alone hung in process pools and socket servers.
#
# Not in the clean interpreters that tests spawn (tests/clusters.py, the
# concurrency harness): they import this package to reach their function,
# and they exist to run native threads.
# A spawned child has imported multiprocessing before it imports us; the
# runner need not import it before the patching.
import sys

from hpc_nova_scheduler import compat

_multiprocessing = sys.modules.get("multiprocessing")
if _multiprocessing is None or _multiprocessing.current_process().name == "MainProcess":
    compat.monkey_patch()
