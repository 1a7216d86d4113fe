# Nova's harness runs its services in eventlet green threads; libraries such
# as oslo.db keep per-thread state that must be created after the patching.
# So patch here, before any test module is imported, whichever subset runs
# (as nova/tests/__init__.py does): patched late, midway through loading the
# tests, the unit tests alone hung in process pools and socket servers.
#
# Only a test runner's import patches: its main thread of its main process.
# Clean interpreters that tests spawn (tests/clusters.py, the concurrency
# harness) import this package to reach their functions, and a Dask
# scheduler imports it from its event loop's thread when it unpickles a
# task; patched there, they would turn green under their running threads
# and hang. Neither multiprocessing nor threading is imported here first:
# where they are not imported yet, this is a runner's main thread.
import sys

from hpc_nova_scheduler import compat


def _in_a_test_runner() -> bool:
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is not None and multiprocessing.current_process().name != "MainProcess":
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.current_thread() is threading.main_thread()


if _in_a_test_runner():
    compat.monkey_patch()


# -- Hypothesis: one profile for every run, CI's ----------------------------
# A loaded CI machine (two cores, shared) made input generation "slow" by
# Hypothesis' clock and failed a test that was right (FailedHealthCheck in
# test_simulate_grid). Time is not what these tests check: no deadline, and
# the health checks about speed and size are off. HYPOTHESIS_PROFILE picks
# another registered profile, e.g. Hypothesis' own "default". (Keep this
# block after any eventlet patching of the package: it imports Hypothesis.)
import os as _os  # noqa: E402 (after the patching, on purpose)

from hypothesis import HealthCheck as _HealthCheck  # noqa: E402
from hypothesis import settings as _settings  # noqa: E402

_settings.register_profile(
    "ci",
    deadline=None,
    suppress_health_check=[
        _HealthCheck.too_slow,
        _HealthCheck.data_too_large,
        _HealthCheck.large_base_example,
    ],
)
_settings.load_profile(_os.environ.get("HYPOTHESIS_PROFILE", "ci"))
