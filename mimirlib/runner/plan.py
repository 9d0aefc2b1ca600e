"""One notebook's run, decided and checked before anything starts (:func:`plan_run`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mimirlib.runner.base import PROFILES_DIR, resolve_path
from mimirlib.runner.names import check_names
from mimirlib.runner.params import notebook_parameters, validate
from mimirlib.runner.resolve import profile_params, resolve_with_sources
from mimirlib.runner.variants import changed_parameters, default_parameters, reproduce_command, variant_for


@dataclass(frozen=True)
class RunPlan:
    """One notebook's run, decided and checked before anything starts."""

    params: dict  # what papermill injects
    sources: dict  # where each parameter came from (for error messages)
    defaults: dict  # every declared parameter's value under the profile alone
    changed: dict  # params that differ from defaults
    variant: str | None  # None: the published chapter
    command: str  # the command line that reproduces the run


def plan_run(
    src: Path,
    profile: str,
    params_file=None,
    overrides=None,
    *,
    variant: str | None = None,
    publish: bool = False,
    declared=None,
    profiles_dir=None,
    cwd=None,
    only_declared: bool = False,
    draw: int | None = None,
) -> RunPlan:
    """Resolve, validate and check one notebook's parameters, and decide where its run goes.

    Raises ``ParameterError`` on anything wrong; starts nothing.
    """
    stem = src.stem
    declared = declared if declared is not None else notebook_parameters(src)
    params, sources = resolve_with_sources(
        stem,
        profile,
        params_file,
        overrides,
        declared=declared,
        profiles_dir=profiles_dir,
        only_declared=only_declared,
        draw=draw,
    )
    validate(params, declared, notebook=stem, sources=sources)
    check_names(params, profile, notebook=stem, sources=sources, profiles_dir=profiles_dir, cwd=cwd)
    profiles = resolve_path(profiles_dir) if profiles_dir else PROFILES_DIR
    drawn = {"draw": draw} if draw is not None and "draw" in declared else {}  # a draw's own value, not a change
    defaults = default_parameters(declared, profile_params(stem, profile, profiles, draw) | drawn)
    changed = changed_parameters(params, defaults)
    variant = variant_for(changed, variant, publish)
    command = reproduce_command(stem, profile, changed, variant, publish, draw=draw)
    return RunPlan(params, sources, defaults, changed, variant, command)
