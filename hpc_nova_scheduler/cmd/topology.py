"""``hpc-nova-scheduler topology show | check``: the network topology as Nova holds it.

Both read the levels of ``[hpc_scheduler] topology_levels``, every host
aggregate's ``hpc:<level>`` metadata and the compute nodes of every cell,
through Nova's own objects (run them with nova-scheduler's nova.conf, as
``reconcile``). ``check`` prints each place where the tags do not form a
tree (a host with two values at one level, a rack whose hosts sit in two
blocks), with the hosts named, and exits 1; 0 when there is none. ``show``
prints the tree, outermost level first, down to the hosts, with the free
and total vCPUs of every domain, counted as the scheduler counts them
(:func:`~hpc_nova_scheduler.scheduler.host_view.resources`: Placement's
capacity less what the instances use), and with ``--png`` draws it.

Reading Nova is all this module does; :mod:`.topology_view` checks,
renders and draws, without Nova.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TextIO

from hpc_nova_scheduler.cmd import common, topology_view
from hpc_nova_scheduler.topology import levels as topology
from hpc_nova_scheduler.topology import tree as topology_tree

#: Where the commands get the cloud from, given the ``hpc:<level>`` keys to
#: read: Nova by default, the harness's Nova in tests.
Source = Callable[[argparse.Namespace, Sequence[str]], topology_tree.Cloud]
#: Exit status of a bad ``topology_levels``, as for a bad option on the command line.
BAD_OPTION = 2


@contextlib.contextmanager
def _quiet_nova() -> Iterator[None]:
    """Nova's import without its chatter (see ``fairshare_live._fairness``)."""
    logging.getLogger("oslo_service.backend").setLevel(logging.WARNING)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
        yield


def read_nova(keys: Sequence[str]) -> topology_tree.Cloud:
    """Every cell's compute hosts and the aggregates' ``keys``, with Nova configured."""
    with _quiet_nova():
        from nova import context as nova_context
        from nova import objects
        from nova.scheduler import host_manager

        from hpc_nova_scheduler.scheduler import aggregate_tags, host_view

    ctxt = nova_context.get_admin_context()
    results = nova_context.scatter_gather_skip_cell0(ctxt, objects.ComputeNodeList.get_all)
    reserved = host_view.reservations()
    totals: dict[str, list[float]] = {}
    for cell, result in sorted(results.items()):
        if nova_context.is_cell_failure_sentinel(result):
            raise common.CommandError(f"cell {cell} did not answer for its compute nodes")
        for node in result:
            if getattr(node, "deleted", False):
                continue
            # Nova's own host state, as nova-scheduler builds it from the node.
            state = host_manager.HostState(node.host, node.hypervisor_hostname, cell)
            state.update(compute=node)
            capacity, free = host_view.resources(state, reserved)
            found = totals.setdefault(node.host, [0.0, 0.0])
            found[0] += capacity.vcpus
            found[1] += free.vcpus
    aggregates = objects.AggregateList.get_all(ctxt)
    return topology_tree.Cloud(
        {host: topology_tree.HostCores(total, free) for host, (total, free) in totals.items()},
        aggregate_tags.metadata_of(aggregates, keys),
    )


def nova_source(args: argparse.Namespace, keys: Sequence[str]) -> topology_tree.Cloud:
    """:func:`read_nova` after loading Nova's configuration from the command's files."""
    from hpc_nova_scheduler.cmd import reconcile

    # Loading Nova's configuration imports the rest of Nova.
    with _quiet_nova():
        return reconcile.read_cloud(args, lambda: read_nova(keys))


def handler(source: Source = nova_source) -> common.Handler:
    """``topology show`` and ``check``, reading the cloud from ``source``."""

    def run(args: argparse.Namespace, out: TextIO) -> int:
        try:
            levels = topology.configured(args.conf)
        except topology.LevelsOptionError as error:
            args.err.write(f"{common.PROG}: {error}\n")
            return BAD_OPTION
        cloud = source(args, [topology.metadata_key(level) for level in levels])
        if args.action == "check":
            return _check(cloud, levels, out)
        return _show(args, cloud, levels, out)

    return run


def _check(cloud: topology_tree.Cloud, levels: Sequence[str], out: TextIO) -> int:
    found = topology_tree.problems(cloud, levels)
    for line in topology_view.check_lines(cloud, levels, found):
        out.write(f"{line}\n")
    return 1 if found else 0


def _show(
    args: argparse.Namespace, cloud: topology_tree.Cloud, levels: Sequence[str], out: TextIO
) -> int:
    root = topology_tree.tree(cloud, levels)
    if args.png:
        # Before anything is printed: a file that cannot be written leaves
        # no tree behind either.
        try:
            topology_view.draw(root, levels, args.png)
        except OSError as error:
            raise common.CommandError(f"--png {args.png}: {error.strerror or error}") from None
    for line in topology_view.text_lines(root, levels):
        out.write(f"{line}\n")
    found = topology_tree.problems(cloud, levels)
    if found:
        args.err.write(
            f"{common.PROG}: warning: the tags do not form a tree ({len(found)} problem(s)); "
            f"a host with two values at a level is shown under the first; see "
            f"'{common.PROG} topology check'\n"
        )
    if args.png:
        out.write(f"wrote {args.png}\n")
    return 0


def add_parser(sub, source: Source = nova_source) -> None:
    parser = sub.add_parser(
        "topology",
        help="show or check the network topology of the aggregates' hpc:<level> tags",
        description="The network topology the scheduler places in: the levels of "
        "[hpc_scheduler] topology_levels, outermost first, each read from the host "
        "aggregate metadata hpc:<level>; the host is always the innermost level, and a host "
        "without a value at a level is a domain of its own there. Reads Nova's compute "
        "nodes and aggregates: needs nova-scheduler's nova.conf (--config-file).",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = actions.add_parser(
        "show",
        help="the tree of domains with their free vCPUs",
        description="Print the tree of domains, outermost level first, down to the "
        "hosts, each with its free and total vCPUs: Placement's capacity ((total - "
        "reserved) x allocation ratio) less what the instances use, as the scheduler "
        "counts them. A host that two aggregates give two values at one level is shown "
        "under the first, with a warning to run 'topology check'.",
    )
    show.add_argument(
        "--png",
        metavar="FILE",
        help="also draw the tree as nested boxes, coloured by the fraction of vCPUs free "
        "(PNG, written whole or not at all)",
    )
    show.set_defaults(func=handler(source))
    check = actions.add_parser(
        "check",
        help="report where the tags do not form a tree (exit 1), with the hosts named",
        description="Report, one line each with the hosts named, every host that two "
        "aggregates give two values at one level and every domain whose hosts sit in two "
        "domains of the level above (a rack in two blocks). Exit status 0 when the tags "
        "form a tree, 1 when they do not, 2 when topology_levels is not valid.",
    )
    check.set_defaults(func=handler(source))
