"""Nova's fake driver leaving, for each running guest, what libvirtd and the kernel leave.

``hpc-scheduler-collector`` finds a compute host's instances in libvirt's
status files and measures them in resctrl monitoring groups. Nova's fake
driver starts no QEMU, so :class:`MeasuredFakeDriver` writes those files
itself: at each spawn (a boot, a rebuild, the destination of a live or cold
migration) a status file named after the instance and a monitoring group
populated as the kernel populates one, both under the folders the
collector reads (``[hpc_collector] libvirt_run_dir`` and ``resctrl_root``,
from the same nova.conf); at each destroy and at the source of a finished
live migration it removes the status file, as libvirtd does when QEMU
exits. The resctrl mount itself (``info/``, the default group) is laid out
once by whoever stands in for the kernel (``tools/cloud.py up``, a test).

Each status file carries the guest's workload in its metadata: the cache
score its application really has, which is the server's metadata
``fake_cache_score`` where the tenant booted it with one (an application
that behaves unlike its flavor says), else the flavor's ``hpc:cache_score``.
:mod:`devcloud.counters` turns it into counter values over time.
"""

from __future__ import annotations

import os
from pathlib import Path

from nova import conf as nova_conf
from nova.virt import fake
from oslo_log import log as logging

from hpc_nova_scheduler import atomicfile
from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.demo.measured_host import status_xml
from hpc_nova_scheduler.demo.resctrl_tree import ResctrlTree

LOG = logging.getLogger(__name__)
CONF = nova_conf.CONF

#: Server metadata naming the cache score the guest's application really has.
WORKLOAD_KEY = "fake_cache_score"


def true_cache_score(instance) -> float:
    """What the guest really uses: ``fake_cache_score`` if booted with one, else declared."""
    for read, key in (
        (lambda: instance.metadata, WORKLOAD_KEY),
        (lambda: instance.flavor.extra_specs, "hpc:cache_score"),
    ):
        try:
            text = (read() or {}).get(key)
        except Exception:  # a migrating instance whose fields cannot be loaded
            continue
        if text is None:
            continue
        try:
            score = float(text)
        except (TypeError, ValueError):
            LOG.warning("instance %s: %s %r is not a number", instance.uuid, key, text)
            continue
        if score >= 0:
            return score
    return 0.0


class MeasuredFakeDriver(fake.MediumFakeDriver):
    """``fake.MediumFakeDriver`` whose guests the collector can find and measure."""

    def __init__(self, virtapi, read_only=False):
        super().__init__(virtapi, read_only)
        hpc_conf.register_collector_opts(CONF)
        group = CONF[hpc_conf.COLLECTOR_GROUP_NAME]
        self.run_dir = Path(group.libvirt_run_dir)
        self.tree = ResctrlTree(Path(group.resctrl_root))

    def status_file(self, instance) -> Path:
        return self.run_dir / f"{instance.name}.xml"

    def _running(self, instance) -> None:
        try:
            self.tree.ensure_monitoring_group(instance.uuid)
            self.run_dir.mkdir(parents=True, exist_ok=True)
            with atomicfile.open_replacing(str(self.status_file(instance))) as stream:
                # This process stands for the guest's QEMU.
                stream.write(
                    status_xml(
                        instance.name,
                        instance.uuid,
                        os.getpid(),
                        vcpus=instance.flavor.vcpus,
                        cache_score=true_cache_score(instance),
                    )
                )
        except OSError as error:
            LOG.warning("instance %s: cannot write its status file: %s", instance.uuid, error)

    def _gone(self, instance) -> None:
        try:
            self.status_file(instance).unlink(missing_ok=True)
        except OSError as error:
            LOG.warning("instance %s: cannot remove its status file: %s", instance.uuid, error)

    def spawn(self, context, instance, *args, **kwargs):
        # Also the destination's spawn of a live or cold migration.
        super().spawn(context, instance, *args, **kwargs)
        self._running(instance)

    def finish_revert_migration(self, context, instance, *args, **kwargs):
        super().finish_revert_migration(context, instance, *args, **kwargs)
        self._running(instance)

    def destroy(self, context, instance, *args, **kwargs):
        super().destroy(context, instance, *args, **kwargs)
        self._gone(instance)

    def post_live_migration(self, context, instance, *args, **kwargs):
        # The source of a finished live migration: QEMU exited here.
        super().post_live_migration(context, instance, *args, **kwargs)
        self._gone(instance)
