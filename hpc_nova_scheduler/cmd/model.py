"""``hpc-nova-scheduler model list | predict | fit | evaluate``: interference models."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import TextIO

from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.cmd import common
from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference import fitting
from hpc_nova_scheduler.interference.base import Tenant

#: Folds of the cross-validation that ``model fit`` reports.
DEFAULT_FOLDS = 5


def _param(text: str) -> tuple[str, float | list[float]]:
    key, sep, value = text.partition("=")
    key = key.strip()
    try:
        if not sep or not key.isidentifier():
            raise ValueError
        numbers = [float(v) for v in value.split(",")]
        if not numbers or not all(math.isfinite(n) for n in numbers):
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected KEY=NUMBER or KEY=N1,N2,..., e.g. max_apps=12"
        ) from None
    return key, numbers if "," in value else numbers[0]


def _model(args: argparse.Namespace):
    from hpc_nova_scheduler.interference import model_registry, resolver

    params = dict(args.param or [])
    for whole in ("max_apps", "trees", "seed", "min_leaf"):
        if whole in params:
            params[whole] = int(params[whole])
    try:
        model = resolver.model(args.model, params=params)
    except model_registry.UnknownModel as error:
        raise common.CommandError(str(error)) from None
    except (TypeError, ValueError) as error:
        raise common.CommandError(f"--param for model {args.model}: {error}") from None
    load, stored = getattr(args, "load", None), getattr(args, "stored", None)
    if load or stored:
        from hpc_nova_scheduler.interference.stored import StoredModelError

        if not model_registry.is_stored_kind(args.model):
            option = "--load" if load else "--stored"
            raise common.CommandError(f"{option}: model {args.model} is not fitted and stored")
        where = f"--load {load}" if load else f"--stored {stored}"
        try:
            if load:
                return resolver.model(args.model, path=load)
            found = common.database(args).stored_model(stored)
            if found is None:
                raise common.CommandError(f"{where}: no model stored under that name")
            model = resolver.from_record(found, kind=args.model)
        except model_registry.UnknownModel as error:  # a model of another kind
            raise common.CommandError(f"{where}: {error}") from None
        except OSError as error:
            raise common.CommandError(f"{where}: {error.strerror}") from None
        except StoredModelError as error:
            raise common.CommandError(f"{where}: {error}") from None
    return model


def _profiles(args: argparse.Namespace) -> dict[str, ProfileRecord]:
    if args.profiles:
        records = datafiles.read_profiles(args.profiles)
    else:
        records = common.database(args).list_profiles()
    return {r.name: r for r in records}


def _tenants(
    names: Sequence[str],
    profiles: dict[str, ProfileRecord],
    where: str,
    host_type: str | None = None,
) -> list[Tenant]:
    try:
        return fitting.tenants(names, profiles, where, host_type)
    except fitting.FitError as error:
        raise common.CommandError(str(error)) from None


def _source(args: argparse.Namespace) -> str:
    return args.profiles or "the plugin database"


def cmd_model_list(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler.interference import model_registry

    if args.stored:
        common.table(
            ("stored as", "kind", "changed", "made with", "fit"),
            [
                (
                    m.name,
                    m.kind,
                    m.updated_at.isoformat(sep=" ", timespec="seconds"),
                    ", ".join(f"{k} {v}" for k, v in m.versions.items()),
                    m.report,
                )
                for m in common.database(args).stored_models()
            ],
            out,
        )
        return 0
    rows = []
    for name in model_registry.names():
        model = model_registry.load(name)
        rows.append((name, ", ".join(model.features), model.summary))
    common.table(("model", "profile features", "what it predicts"), rows, out)
    return 0


def cmd_model_predict(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler.interference.base import MissingFeatures, ModelNotReady

    model = _model(args)
    if model.host_typed and not args.host_type:
        known = getattr(model, "host_types", ())
        raise common.CommandError(
            f"model {model.name} tells host types apart: give --host-type TYPE"
            + (f" (it was fitted on {', '.join(known)})" if known else "")
        )
    tenants = _tenants(args.applications, _profiles(args), _source(args), args.host_type)
    try:
        prediction = model.predict(tenants)
    except (MissingFeatures, ModelNotReady) as error:
        raise common.CommandError(str(error)) from None
    common.table(
        ("application", "predicted slowdown (%)"),
        [(t.name, f"{s:.2f}") for t, s in zip(tenants, prediction.slowdowns, strict=True)],
        out,
    )
    out.write(f"model: {model.describe()}\n")
    if args.model == "cache-score":
        verdict = "yes" if model.admits(tenants, 0.0) else "no"
        out.write(
            f"cache score on the host: {prediction.score:g}; within the thresholds: {verdict} "
            "(seed 003's rule predicts no slowdown)\n"
        )
    out.write(f"predicted interference: {prediction.worst:.2f}%\n")
    return 0


def _measurements(args: argparse.Namespace) -> fitting.Measurements:
    """The dataset of ``model fit`` or ``model evaluate``, its profiles read when asked for."""
    return fitting.Measurements(args.dataset, _source(args), lambda: _profiles(args))


def _write(output: Sequence[fitting.Output], out: TextIO) -> None:
    """What a fitting says: each line as it is, each table drawn."""
    for part in output:
        if isinstance(part, fitting.Table):
            common.table(part.headings, part.rows, out)
        else:
            out.write(f"{part}\n")


def _keep(args: argparse.Namespace, kind: str, fitted, report: str, out: TextIO) -> None:
    """Write the fitted model where ``--save`` and ``--store`` say."""
    from hpc_nova_scheduler import atomicfile

    data = fitted.dumps()
    versions = ", ".join(f"{k} {v}" for k, v in fitted.versions.items())
    if args.save:
        with atomicfile.open_replacing(args.save, "wb") as stream:
            stream.write(data)
        out.write(f"stored in {args.save} (skops; made with {versions})\n")
    if args.store:
        common.database(args).store_model(args.store, kind, data, fitted.versions, report)
        out.write(
            f"stored in the plugin database as {args.store} (skops; made with {versions}); "
            f"nova-scheduler uses it with [hpc_scheduler] interference_model = {args.store}\n"
        )


def cmd_model_fit(args: argparse.Namespace, out: TextIO) -> int:
    model = _model(args)
    method = fitting.of(model)
    if method.keeps and not args.save and not args.store:
        raise common.CommandError(
            f"model {model.name}: say where to keep it, --save FILE or --store NAME"
        )
    try:
        fitted = method.fit(model, _measurements(args), args.folds, args.seed)
    except fitting.FitError as error:
        raise common.CommandError(str(error)) from None
    _write(fitted.output, out)
    if method.keeps:
        _keep(args, model.name, fitted.model, fitted.report, out)
    return 0


def cmd_model_evaluate(args: argparse.Namespace, out: TextIO) -> int:
    model = _model(args)
    try:
        output = fitting.of(model).evaluate(model, _measurements(args), args.verbose)
    except fitting.FitError as error:
        raise common.CommandError(str(error)) from None
    _write(output, out)
    return 0


def add_parser(sub) -> None:
    from hpc_nova_scheduler.cmd import options

    group = sub.add_parser(
        "model",
        help="interference models: list, predict, fit, evaluate",
        description="Interference models predict the slowdown of applications sharing a "
        "host from their profiles. See doc/source/user/interference-models.rst.",
    )
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="the registered models and what they read")
    listing.add_argument(
        "--stored", action="store_true", help="the fitted models in the plugin database instead"
    )
    listing.set_defaults(func=cmd_model_list)

    def model_options(parser: argparse.ArgumentParser, default: str | None) -> None:
        parser.add_argument(
            "--model",
            default=default,
            required=default is None,
            help="the model's name (see model list)",
        )
        parser.add_argument(
            "--param",
            type=_param,
            action="append",
            metavar="KEY=VALUE",
            help="a model parameter, e.g. max_apps=12 or coefficients=0.75,0.16,0.15 (repeatable)",
        )
        parser.add_argument(
            "--profiles",
            metavar="FILE",
            help="profiles from this YAML or CSV file instead of the plugin database",
        )

    def load_option(parser: argparse.ArgumentParser) -> None:
        where = parser.add_mutually_exclusive_group()
        where.add_argument(
            "--load", metavar="FILE", help="a fitted model stored by 'model fit --save'"
        )
        where.add_argument(
            "--stored",
            metavar="NAME",
            help="a fitted model in the plugin database ('model fit --store')",
        )

    predict = actions.add_parser(
        "predict",
        help="predict the interference of applications sharing one host",
        description="Predict each application's slowdown, and the host's interference, "
        "when the applications given share one host (name one twice for two instances).",
    )
    model_options(predict, None)
    load_option(predict)
    predict.add_argument(
        "--host-type",
        metavar="TYPE",
        help="the host's processor group, for models that tell host types apart (runtime-trees)",
    )
    predict.add_argument("applications", nargs="+", metavar="APP", help="an application")
    predict.set_defaults(func=cmd_model_predict)

    fit = actions.add_parser(
        "fit",
        help="refit a model's coefficients to measured hosts (least squares)",
        description="Refit the coefficients of an ivmp model to hosts measured on your own "
        "hardware, fit pair-forest to measured pairs and their profiles' counters, or fit "
        "runtime-trees to measured runs and their profiles' solo runs; report the fit and a "
        "cross-validation.",
    )
    model_options(fit, None)
    fit.add_argument(
        "dataset",
        metavar="DATASET",
        help="measured hosts (YAML 'hosts:' or CSV) for ivmp models; measured pairs "
        "(an interference file) for pair-forest; measured runs (YAML 'runs:' or CSV) for "
        "runtime-trees",
    )
    fit.add_argument("--save", metavar="FILE", help="where to store a fitted model (skops)")
    fit.add_argument(
        "--store",
        metavar="NAME",
        help="store the fitted model in the plugin database under NAME, for nova-scheduler",
    )
    fit.add_argument(
        "--folds", type=options.positive_int, default=DEFAULT_FOLDS, help="cross-validation folds"
    )
    fit.add_argument("--seed", type=int, default=0, help="seed of the folds")
    fit.set_defaults(func=cmd_model_fit)

    evaluate = actions.add_parser(
        "evaluate",
        help="compare a model's predictions with measured hosts",
        description="Predict every measured host of DATASET and report R^2 and the errors.",
    )
    model_options(evaluate, None)
    load_option(evaluate)
    evaluate.add_argument(
        "dataset",
        metavar="DATASET",
        help="measured hosts, pairs (pair-forest) or runs (runtime-trees), YAML or CSV",
    )
    evaluate.add_argument("-v", "--verbose", action="store_true", help="one line per host or run")
    evaluate.set_defaults(func=cmd_model_evaluate)
