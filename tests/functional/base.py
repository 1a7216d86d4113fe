"""Base classes of the functional tests: the in-process cloud of the demo."""

from __future__ import annotations

from hpc_nova_scheduler.demo.cloud import HPC_FILTERS, HPC_WEIGHERS, HpcCloud, NovaCloud

__all__ = ["HPC_FILTERS", "HPC_WEIGHERS", "HpcTestCase", "NovaTestCase"]


class NovaTestCase(NovaCloud):
    """Nova with the plugin's classes available next to Nova's own."""


class HpcTestCase(HpcCloud):
    """A small cloud of shaped hosts, racks and processor groups, with the plugin on."""
