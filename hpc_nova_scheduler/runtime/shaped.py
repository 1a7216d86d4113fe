"""A seeded dataset shaped like seed 000's profiling campaign.

Kim et al. did not publish their measurements. To exercise ``runtime-trees``
end to end (fit, cross-validate, evaluate, admit in Nova, slow jobs in the
simulator) without their cluster, this module draws a dataset with the same
shape:

* two host types, ``T1`` (more cores per co-runner, a low-end network) and
  ``T2`` (a high-end network, disks shared by more VMs);
* four MPI applications, each its own family, network- or compute-bound;
* four big-data applications sharing the family ``bigdata``, storage-bound;
* synthetic co-runners at five intensity levels of network and of storage
  load (``synthetic-net-1`` .. ``-5``, ``synthetic-disk-1`` .. ``-5``);
* training runs: each application alone with 1, 2 and 4 of its VMs on each
  type, and next to every synthetic co-runner (the paper's 6 solo runs and
  80 co-runs of an MPI application);
* validation runs: each application next to the *real* applications, which
  the paper validates on (100 to 406 test cases).

The run times come from a contention law that no model here knows: each
resource's load beyond a knee, weighted by how much the application needs
that resource on that host type, lengthens its run, and every run carries
8 % log-normal noise. It is a workload for testing the learner, not a claim
about any real cluster.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import ProfileRecord, SoloRun
from hpc_nova_scheduler.datafiles import RunRecord

HOST_TYPES = ("T1", "T2")
#: What one host of each type can serve before VMs contend: cores (CPU %
#: of one VM = 100), network MB/s and disk MB/s.
CAPACITY = {
    "T1": {"cpu": 800.0, "net": 120.0, "disk": 360.0},
    "T2": {"cpu": 800.0, "net": 400.0, "disk": 200.0},
}
LEVELS = 5
NOISE = 0.08


@dataclasses.dataclass(frozen=True)
class _Kind:
    family: str | None
    base: float  # run time alone, one VM, on T1 (s)
    speed: dict[str, float]  # run time factor by host type
    cpu: float  # CPU % of a VM
    net: float  # MB/s each way per VM
    disk: float  # MB/s read + write per VM
    sensitivity: dict[str, float]  # slowdown per unit of overload, by resource


APPLICATIONS = {
    "Zeusmp2": _Kind(
        None, 420, {"T1": 1.0, "T2": 1.1}, 98, 6, 1, {"cpu": 0.6, "net": 0.4, "disk": 0.05}
    ),
    "CG": _Kind(
        None, 300, {"T1": 1.0, "T2": 0.8}, 95, 22, 1, {"cpu": 0.5, "net": 1.6, "disk": 0.05}
    ),
    "LAMMPS": _Kind(
        None, 360, {"T1": 1.0, "T2": 0.85}, 97, 15, 2, {"cpu": 0.8, "net": 1.1, "disk": 0.1}
    ),
    "NAMD": _Kind(
        None, 510, {"T1": 1.0, "T2": 0.7}, 99, 18, 1, {"cpu": 1.2, "net": 1.4, "disk": 0.1}
    ),
    "GrepSpark": _Kind(
        "bigdata", 260, {"T1": 1.0, "T2": 1.2}, 55, 8, 45, {"cpu": 0.3, "net": 0.3, "disk": 1.5}
    ),
    "WordCountSpark": _Kind(
        "bigdata", 300, {"T1": 1.0, "T2": 1.15}, 70, 6, 30, {"cpu": 0.5, "net": 0.2, "disk": 1.1}
    ),
    "TeraGen": _Kind(
        "bigdata", 200, {"T1": 1.0, "T2": 1.3}, 45, 20, 60, {"cpu": 0.2, "net": 0.8, "disk": 1.8}
    ),
    "GrepHadoop": _Kind(
        "bigdata", 340, {"T1": 1.0, "T2": 1.25}, 50, 10, 40, {"cpu": 0.3, "net": 0.4, "disk": 1.4}
    ),
}


def _synthetic(resource: str, level: int) -> _Kind:
    # Network workloads use the CPU at about 50 % or 100 % (the paper's two
    # levels); storage workloads at about 50 %.
    cpu = 100.0 if resource == "net" and level > 2 else 50.0
    net = 14.0 * level if resource == "net" else 1.0
    disk = 25.0 * level if resource == "disk" else 1.0
    return _Kind("synthetic", 100, {"T1": 1.0, "T2": 1.0}, cpu, net, disk, {})


SYNTHETIC = {
    f"synthetic-{resource}-{level}": _synthetic(resource, level)
    for resource in ("net", "disk")
    for level in range(1, LEVELS + 1)
}


def _metrics(kind: _Kind, host_type: str) -> dict[str, float]:
    # A VM that waits on a slow network idles more and moves less.
    net = min(kind.net, CAPACITY[host_type]["net"] / 4)
    return {
        "cpu_user": round(kind.cpu * 0.92, 3),
        "cpu_idle": round(100.0 - kind.cpu, 3),
        "net_send": round(net, 3),
        "net_recv": round(net, 3),
        "disk_read": round(kind.disk * 0.6, 3),
        "disk_write": round(kind.disk * 0.4, 3),
    }


def _load(kind: _Kind, vms: int) -> dict[str, float]:
    return {"cpu": kind.cpu * vms, "net": 2 * kind.net * vms, "disk": kind.disk * vms}


def true_runtime(
    name: str, host_type: str, vms: int, co_runners: dict[str, int], rng: np.random.Generator
) -> float:
    """The contention law: solo time stretched by each resource's overload, with noise."""
    kind = APPLICATIONS[name]
    solo = kind.base * kind.speed[host_type] * (1.0 + 0.04 * (vms - 1))
    load = _load(kind, vms)
    for other, count in co_runners.items():
        for resource, value in _load(_kind(other), count).items():
            load[resource] += value
    stretch = 1.0
    for resource, value in load.items():
        # Contention starts before a resource is full and saturates: a
        # queue's waits grow fast, then the fair share caps the loss.
        overload = max(0.0, value / CAPACITY[host_type][resource] - 0.6)
        stretch += kind.sensitivity[resource] * min(overload, 2.0) * 0.5
    return float(solo * stretch * math.exp(rng.normal(0.0, NOISE)))


def _kind(name: str) -> _Kind:
    return APPLICATIONS.get(name) or SYNTHETIC[name]


@dataclasses.dataclass(frozen=True)
class Dataset:
    profiles: list[ProfileRecord]
    #: Alone and next to synthetic workloads: what the model is fitted on.
    training: list[RunRecord]
    #: Next to the other real applications: what it is validated on.
    validation: list[RunRecord]


def dataset(seed: int = 0) -> Dataset:
    """The profiles, training runs and validation runs, the same for one seed."""
    rng = np.random.default_rng(seed)
    profiles = []
    for name, kind in {**APPLICATIONS, **SYNTHETIC}.items():
        runs = {}
        for host_type in HOST_TYPES:
            solo = kind.base * kind.speed[host_type]
            runs[host_type] = SoloRun(round(solo, 3), _metrics(kind, host_type))
        profiles.append(
            ProfileRecord(
                name,
                AppClass.NON_HPC if kind.family == "synthetic" else AppClass.ASYNC_HPC,
                solo_runtime=runs["T1"].runtime,
                family=kind.family,
                solo_runs=runs,
                description="shaped like seed 000's applications (synthetic data)",
            )
        )
    training, validation = [], []
    for name in APPLICATIONS:
        for host_type in HOST_TYPES:
            for vms in (1, 2, 4):
                training.append(_run(name, host_type, vms, {}, rng))
            for other in SYNTHETIC:
                for vms, count in ((2, 2), (4, 4), (4, 2), (2, 4)):
                    training.append(_run(name, host_type, vms, {other: count}, rng))
            for other in APPLICATIONS:
                if other == name:
                    continue
                for vms, count in ((2, 2), (4, 4)):
                    validation.append(_run(name, host_type, vms, {other: count}, rng))
    return Dataset(profiles, training, validation)


def _run(
    name: str, host_type: str, vms: int, co_runners: dict[str, int], rng: np.random.Generator
) -> RunRecord:
    runtime = true_runtime(name, host_type, vms, co_runners, rng)
    return RunRecord(name, host_type, round(runtime, 3), vms, tuple(sorted(co_runners.items())))
