"""nova-compute whose fake driver leaves status files and resctrl groups (``up --measured``).

``python -m devcloud.measured_compute --config-file nova.conf --config-file
compute-00.conf``: Nova's own ``nova-compute`` entry point
(:func:`nova.cmd.compute.main`), with
:class:`~hpc_nova_scheduler.demo.measured_driver.MeasuredFakeDriver` grafted
onto ``nova.virt.fake`` first, because Nova loads drivers from there only
(``compute_driver = fake.MeasuredFakeDriver``).
"""

import sys

# nova-compute's module patches the concurrency backend as it is imported,
# before anything else of Nova's.
from nova.cmd import compute  # isort: skip

import nova.virt.fake

from hpc_nova_scheduler.demo import measured_driver

if __name__ == "__main__":
    nova.virt.fake.MeasuredFakeDriver = measured_driver.MeasuredFakeDriver
    sys.exit(compute.main())
