#!/usr/bin/env python3
"""Placement's sample of allocation candidates, and what narrowing it costs and buys (issue 46).

Three measurements, each printed as a table:

``order``
    Placement itself (its in-process fixture, SQLite) with ``--racks``
    racks of ``--rack-size`` providers, created interleaved across racks as
    concurrent compute services create them. ``GET /allocation_candidates``
    with ``limit`` keeps "the first" candidates: which ones, by creation
    order and by rack, for three request shapes, and whether the same
    request gets the same sample twice.

``keeper``
    The agent's idle-traits keeper against the same Placement: seconds and
    provider writes of the first run (every node idle, every node tagged)
    and of a run after ``--churn`` of the nodes changed state.

``synchpc``
    A Monte Carlo model of a 10,000-host cloud (``--racks`` racks of
    ``--rack-size``): each host has room for ``--slots`` VMs of a SyncHPC
    flavor, some already taken (independently per host, at a rack's own
    load drawn around the cloud's load). Placement offers ``--limit`` of
    the hosts with room, uniformly at random (what its hash order amounts
    to, see ``order``). For a 16-VM request: how often does some rack have
    room for all 16 in the whole cloud, and how often does one also have it
    among the offered hosts; and the same with the sample narrowed to the
    roomiest racks (as many whole racks as fit in ``--limit`` hosts).

    python benchmarks/placement_sample.py order [--racks 50] [--rack-size 40] [--limit 200]
    python benchmarks/placement_sample.py keeper [--racks 50] [--churn 0.02]
    python benchmarks/placement_sample.py synchpc [--trials 2000] [--limit 1000]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
import uuid as uuid_lib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

SEED = 46


class Placement:
    """Placement's WSGI application in this process, on SQLite, through keystoneauth."""

    def __init__(self) -> None:
        import fixtures
        from keystoneauth1 import adapter as ks_adapter
        from keystoneauth1 import session as ks_session
        from placement.tests.functional.fixtures import placement as placement_fixtures
        from requests import adapters

        self._patch = fixtures.MonkeyPatch(
            "keystoneauth1.session.TCPKeepAliveAdapter.init_poolmanager",
            adapters.HTTPAdapter.init_poolmanager,
        )
        self._patch.setUp()
        self._fixture = placement_fixtures.PlacementFixture()
        self._fixture.setUp()
        self._adapter = ks_adapter.Adapter(ks_session.Session(auth=None), raise_exc=False)
        self.calls = collections.Counter()

    def close(self) -> None:
        self._fixture.cleanUp()
        self._patch.cleanUp()

    def _call(self, method: str, url: str, data=None, version: str | None = None):
        self.calls[method] += 1
        headers = {"x-auth-token": self._fixture.token}
        if version:
            headers["OpenStack-API-Version"] = f"placement {version}"
        kwargs = {"endpoint_override": self._fixture.endpoint, "headers": headers}
        if method != "GET":
            kwargs["json"] = data
        return getattr(self._adapter, method.lower())(url, **kwargs)

    def get(self, url: str, version: str | None = None):
        return self._call("GET", url, version=version)

    def put(self, url: str, data, version: str | None = None):
        return self._call("PUT", url, data, version)

    def post(self, url: str, data, version: str | None = None):
        return self._call("POST", url, data, version)

    def provider(self, name: str, vcpus: int = 64) -> str:
        uuid = str(uuid_lib.uuid4())
        self.post("/resource_providers", {"name": name, "uuid": uuid}, "1.20")
        inventories = {"VCPU": {"total": vcpus}, "MEMORY_MB": {"total": vcpus * 4096}}
        self.put(
            f"/resource_providers/{uuid}/inventories",
            {"resource_provider_generation": 0, "inventories": inventories},
            "1.20",
        )
        return uuid


def interleaved(racks: int, size: int) -> list[tuple[int, int]]:
    """(rack, host) in the order concurrent compute services would create them."""
    return [(rack, host) for host in range(size) for rack in range(racks)]


def order(args: argparse.Namespace) -> None:
    placement = Placement()
    try:
        rack_of: dict[str, int] = {}
        created: dict[str, int] = {}
        for index, (rack, host) in enumerate(interleaved(args.racks, args.rack_size)):
            uuid = placement.provider(f"r{rack}-h{host}")
            rack_of[uuid], created[uuid] = rack, index
        total = len(created)
        expected = args.rack_size * args.limit / total
        print(
            f"{total} providers, {args.racks} racks of {args.rack_size}, limit {args.limit} "
            f"(a uniform sample would give {expected:.1f} a rack)"
        )
        print(
            f"{'request':<24} {'first created':>13} {'median index':>12} "
            f"{'per rack min/mean/max':>22} {'racks with 0':>12}"
        )
        samples = {}
        for vcpus in (1, 8, 16):
            url = (
                f"/allocation_candidates?resources=VCPU:{vcpus},MEMORY_MB:{vcpus * 2048}"
                f"&limit={args.limit}"
            )
            body = placement.get(url, "1.36").json()
            chosen = [next(iter(ar["allocations"])) for ar in body["allocation_requests"]]
            samples[vcpus] = chosen
            per_rack = collections.Counter(rack_of[u] for u in chosen)
            counts = [per_rack.get(rack, 0) for rack in range(args.racks)]
            indices = sorted(created[u] for u in chosen)
            print(
                f"VCPU:{vcpus:<19} {sum(i < args.limit for i in indices):>13} "
                f"{indices[len(indices) // 2]:>12} "
                f"{min(counts):>8}/{np.mean(counts):.1f}/{max(counts):<8} {counts.count(0):>12}"
            )
        again = placement.get(
            f"/allocation_candidates?resources=VCPU:8,MEMORY_MB:16384&limit={args.limit}", "1.36"
        ).json()
        same = [next(iter(ar["allocations"])) for ar in again["allocation_requests"]]
        overlap = len(set(samples[1]) & set(samples[8]))
        for limit in (args.limit, total):
            url = f"/allocation_candidates?resources=VCPU:8,MEMORY_MB:16384&limit={limit}"
            times = []
            for _ in range(5):
                started = time.perf_counter()
                response = placement.get(url, "1.36")
                times.append(time.perf_counter() - started)
            print(
                f"GET /allocation_candidates limit={limit}: median {np.median(times):.3f} s, "
                f"{len(response.content) / 1e6:.2f} MB"
            )
        print(f"the same request again gets the same sample: {same == samples[8]}")
        print(f"hosts common to the samples of VCPU:1 and VCPU:8: {overlap} of {args.limit}")
    finally:
        placement.close()


def keeper(args: argparse.Namespace) -> None:
    import threading

    from hpc_nova_scheduler.agent import idle_traits
    from hpc_nova_scheduler.core.narrowing import NodeUse
    from hpc_nova_scheduler.db import api as db_api

    placement = Placement()
    database = db_api.Database("sqlite://")
    database.sync()
    try:
        uuids = [
            placement.provider(f"r{rack}-h{host}")
            for rack, host in interleaved(args.racks, args.rack_size)
        ]
        uses = {uuid: NodeUse(uuid, 0, 0) for uuid in uuids}
        run_keeper = idle_traits.IdleTraitKeeper(
            lambda: database,
            "bench",
            nodes=lambda: (list(uses.values()), True),
            placement=lambda: placement,
            stopping=threading.Event(),
        )
        print(f"{len(uuids)} providers; Placement in process on SQLite")
        print(f"{'run':<30} {'seconds':>8} {'tagged':>7} {'untagged':>8} {'GET':>6} {'PUT':>6}")

        def one(name: str) -> None:
            placement.calls.clear()
            started = time.perf_counter()
            run = run_keeper.run(10)
            seconds = time.perf_counter() - started
            print(
                f"{name:<30} {seconds:>8.2f} {len(run.added):>7} {len(run.removed):>8} "
                f"{placement.calls['GET']:>6} {placement.calls['PUT']:>6}"
            )

        one("first (every node idle)")
        one("nothing changed")
        rng = np.random.default_rng(SEED)
        changed = rng.choice(len(uuids), int(len(uuids) * args.churn), replace=False)
        for index in changed:
            uses[uuids[index]] = NodeUse(uuids[index], 1, 8)
        one(f"{args.churn:.0%} became busy")
        for index in changed:
            uses[uuids[index]] = NodeUse(uuids[index], 0, 0)
        one(f"{args.churn:.0%} idle again")
    finally:
        database.dispose()
        placement.close()


def synchpc(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(SEED)
    hosts = args.racks * args.rack_size
    rack = np.repeat(np.arange(args.racks), args.rack_size)
    open_racks = args.limit // args.rack_size
    print(
        f"{hosts} hosts, {args.racks} racks of {args.rack_size}, {args.slots} slots a host, "
        f"limit {args.limit}, {args.count}-VM requests, {args.trials} cloud states a load"
    )
    print(
        f"{'load':>5} {'spread':>6} {'offered':>8} {'a rack fits':>11} "
        f"{'sampled: fits':>13} {'of those':>8} {'roomiest racks':>14}"
    )
    for load in args.loads:
        for spread in (0.0, 0.05, 0.15):
            fits = sampled_fits = narrowed_fits = 0
            offered = []
            for _ in range(args.trials):
                rack_load = np.clip(rng.normal(load, spread, args.racks), 0.0, 1.0)
                taken = rng.binomial(args.slots, rack_load[rack])
                free = args.slots - taken
                room = np.bincount(rack, weights=free, minlength=args.racks)
                fit = room.max() >= args.count
                candidates = np.flatnonzero(free > 0)
                if len(candidates) > args.limit:
                    chosen = rng.choice(candidates, args.limit, replace=False)
                else:
                    chosen = candidates
                offered.append(len(chosen))
                seen = np.bincount(rack[chosen], weights=free[chosen], minlength=args.racks)
                roomiest = np.argsort(-room, kind="stable")[:open_racks]
                fits += fit
                sampled_fits += fit and seen.max() >= args.count
                narrowed_fits += fit and room[roomiest].max() >= args.count
            share = sampled_fits / fits if fits else float("nan")
            narrowed = narrowed_fits / fits if fits else float("nan")
            print(
                f"{load:>5.2f} {spread:>6.2f} {int(np.mean(offered)):>8} "
                f"{fits / args.trials:>11.3f} {sampled_fits / args.trials:>13.3f} "
                f"{share:>8.3f} {narrowed:>14.3f}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["order", "keeper", "synchpc"])
    parser.add_argument("--racks", type=int)
    parser.add_argument("--rack-size", type=int, default=40)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--churn", type=float, default=0.02)
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--slots", type=int, default=6)
    parser.add_argument("--count", type=int, default=16)
    parser.add_argument(
        "--loads", type=lambda text: [float(x) for x in text.split(",")], default=[0.5, 0.8, 0.9]
    )
    args = parser.parse_args(argv)
    if args.what == "synchpc":
        args.racks = args.racks or 250
        args.limit = args.limit or 1000
        synchpc(args)
    elif args.what == "order":
        args.racks = args.racks or 50
        args.limit = args.limit or 200
        order(args)
    else:
        args.racks = args.racks or 50
        keeper(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
