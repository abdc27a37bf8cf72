"""Helpers shared by the commands: loading a model or a hardware profile, writing warnings."""

from __future__ import annotations

from planner.analysis.records import frozen
from planner.analysis.config import parse_config
from planner.analysis.resolve import Resolved
from planner.analysis.spec import ModelSpec

from .render import warn

from .options import DEFAULT_HARDWARE  # noqa: F401  (one place for the defaults)


@frozen
class LoadedModel:
    spec: ModelSpec
    resolved: Resolved

    @property
    def id(self) -> str:
        return self.resolved.id

    @property
    def source(self) -> str:
        return self.resolved.source


def load_model(model: str, revision: str | None = None, refresh: bool = False) -> LoadedModel:
    from planner.analysis.errors import ConfigError
    from planner.analysis.resolve import resolve_local

    r = resolve_local(model) if revision is None else None  # a file or bundled model: no hub code loaded
    if r is None:
        from .hub import resolve_model

        r = resolve_model(model, revision, refresh)
    try:
        spec = parse_config(r.config, where=r.where, name=r.id, source=r.source)
    except ConfigError as exc:
        if r.source != "hub-cache":
            raise
        # a copy cached by an earlier run (or another tool): say how to fetch it again
        from .hub import REFRESH_HINT

        hint = "; ".join(h for h in (exc.hint, f"this is the cached copy at {r.path}: {REFRESH_HINT}") if h)
        raise type(exc)(exc.message, hint) from None
    from planner.analysis.config import supported_model_types
    from planner.analysis.errors import short

    if spec.model_type not in supported_model_types():  # an estimate, whatever the output format: say so on stderr
        warn(f"{r.where}: model_type {short(spec.model_type, 60)} is not a known family; analysed as a generic "
             "Llama-style decoder (see the caveats for each assumption)")
    return LoadedModel(spec, r)


def load_hardware(name: str | None):
    from planner.hardware.profiles import load_profile

    return load_profile(DEFAULT_HARDWARE if name is None else name)  # an empty --hardware "" is an error


def warn_all(warnings) -> None:
    """An analysis's warnings on stderr (they also stay in its notes)."""
    for w in warnings:
        warn(w)


def resolve_layout(gpus: int, tp: int | None = None, pp: int | None = None, ep: int | None = None,
                   dp: int | None = None):
    """The ``analysis.parallel.Layout`` that --gpus/--tp/--pp/--ep/--dp name, or None when only --gpus
    (more than one) is given: the caller then searches the best layout on those GPUs. Missing degrees
    are filled so that tp × pp × dp = --gpus (replicas = --gpus / (tp × pp) when --dp is not given)."""
    from planner.analysis.errors import OptionError
    from planner.analysis.parallel import Layout

    if tp is None and pp is None and ep is None and dp is None:
        return None if gpus > 1 else Layout()
    pp_ = pp or 1
    if tp is None:
        per_pp = pp_ * (dp or 1)
        if gpus % per_pp:
            raise OptionError(f"--gpus {gpus} is not a multiple of --pp {pp_}" + (f" × --dp {dp}" if dp else ""))
        tp = gpus // per_pp
    if gpus % (tp * pp_):
        raise OptionError(f"--gpus {gpus} is not a multiple of --tp {tp}" + (f" × --pp {pp_}" if pp_ > 1 else ""))
    if dp is None:
        dp = gpus // (tp * pp_)
    elif tp * pp_ * dp != gpus:
        raise OptionError(f"--tp {tp} × --pp {pp_} × --dp {dp} is {tp * pp_ * dp} GPUs, not --gpus {gpus}",
                          "give --gpus as the product, or leave --dp out (it is then --gpus / (tp × pp))")
    ep_ = ep or 1
    if tp % ep_:
        raise OptionError(f"--ep {ep_} does not divide --tp {tp}",
                          "expert parallelism splits the experts over the tp GPUs of a stage; choose a divisor of tp")
    return Layout(tp=tp, pp=pp_, ep=ep_, dp=dp)


def resolve_tp(gpus: int, tp: int | None) -> tuple[int, int]:
    """(tensor-parallel degree, replicas) from --gpus and --tp (default: all GPUs in one replica)."""
    from planner.analysis.errors import OptionError

    tp = gpus if tp is None else tp
    if gpus % tp:
        raise OptionError(f"--gpus {gpus} is not a multiple of --tp {tp}")
    return tp, gpus // tp
