"""What ``plan`` and ``rebalance`` share: a batch planner chosen by name, and its parameters."""

from __future__ import annotations

import argparse

from hpc_nova_scheduler.cmd import common, options


def add_planner_arguments(parser: argparse.ArgumentParser, alpha_help: str) -> None:
    """``--alpha``, ``--multistart``, ``--time-limit`` and ``--seed``."""
    parser.add_argument("--alpha", type=options.non_negative_float, default=0.7, help=alpha_help)
    parser.add_argument(
        "--multistart",
        type=options.positive_int,
        default=50,
        help="ILS starts (default 50)",
    )
    parser.add_argument(
        "--time-limit",
        type=options.positive_float,
        default=60.0,
        metavar="SECONDS",
        help="MILP time limit (default 60)",
    )
    parser.add_argument("--seed", type=int, default=0, help="ILS's random seed (default 0)")


def load_planner(args: argparse.Namespace, name: str):
    """The planner ``name`` with the parameters of ``args``; a bad one is a CommandError."""
    from hpc_nova_scheduler.ivmp.ils import IlsParameters
    from hpc_nova_scheduler.planners import registry

    # alpha is checked whatever the planner: rebalance values moves with it too.
    try:
        parameters = IlsParameters(alpha=args.alpha, multistart=args.multistart, seed=args.seed)
    except ValueError as error:
        raise common.CommandError(f"--alpha: {error}") from None
    extra: dict = {}
    if name == "ils":
        extra = {"parameters": parameters}
    elif name == "milp":
        extra = {"parameters": parameters, "time_limit": args.time_limit}
    try:
        return registry.load(name, **extra)
    except registry.UnknownPlanner as error:
        raise common.CommandError(f"--planner: {error}") from None
