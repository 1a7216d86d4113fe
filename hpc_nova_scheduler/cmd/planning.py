"""What ``plan`` and ``rebalance`` share: a batch planner chosen by name, and its parameters."""

from __future__ import annotations

import argparse

from hpc_nova_scheduler.cmd import common, options

#: The interference model that ``plan`` reports each host's level by and
#: ``rebalance`` values moves with: seed 004's, which ILS and MILP optimise.
MODEL = "ivmp"


def add_planner_arguments(parser: argparse.ArgumentParser, alpha_help: str) -> None:
    """``--alpha``, ``--multistart``, ``--time-limit``, ``--seed`` and ``--runtime-model``."""
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
    parser.add_argument(
        "--seed", type=int, default=0, help="ILS's and annealing's random seed (default 0)"
    )
    parser.add_argument(
        "--runtime-model",
        metavar="FILE",
        help="annealing: the fitted runtime-trees model "
        "('model fit --model runtime-trees ... --save FILE')",
    )


def load_planner(args: argparse.Namespace, name: str):
    """The planner ``name`` with the options of ``args``; a bad one is a CommandError.

    Every planner is given every shared option (``planners.base.OPTIONS``)
    and uses those it knows, so that this names no planner.
    """
    from hpc_nova_scheduler.planners import planner_registry
    from hpc_nova_scheduler.planners.base import check_alpha

    # alpha is checked whatever the planner: rebalance values moves with it too.
    try:
        check_alpha(args.alpha)
    except ValueError as error:
        raise common.CommandError(f"--alpha: {error}") from None
    try:
        return planner_registry.load(
            name,
            alpha=args.alpha,
            multistart=args.multistart,
            seed=args.seed,
            time_limit=args.time_limit,
            runtime_model=getattr(args, "runtime_model", None),
        )
    except planner_registry.UnknownPlanner as error:
        raise common.CommandError(f"--planner: {error}") from None
    except TypeError as error:
        # A planner of another package that does not take the shared options.
        raise common.CommandError(f"--planner {name}: {error}") from None


def interference_model():
    """The model ``plan`` and ``rebalance`` judge hosts by: :data:`MODEL`."""
    from hpc_nova_scheduler.interference import model_registry

    return model_registry.load(MODEL)
