"""Names a parameter holds (attacks, backbones, engines, domains, models), checked before a kernel starts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from mimirlib.profiles import load_profile
from mimirlib.runner.base import PROFILES_DIR, REPO_ROOT, ParameterError, resolve_path
from mimirlib.runner.params import where_origin

# Parameters whose values name things that can be checked here, by name: a chapter that fails
# on them fails minutes later, inside the kernel, after the lab and the models were loaded.
ATTACK_PARAMETERS = ("attacks", "after_attacks")  # mimirlib.core.attacks.ATTACKS
# mimirlib.core.engines.ENGINES (where forward passes run) and the Ray engine's settings (RAY_PARAMETERS)
ENGINE_PARAMETERS = ("engine", "ray_address", "ray_workers", "ray_gpus_per_worker", "ray_timeout")
BACKBONE_PARAMETERS = ("backbones",)  # mimirlib.core.range_scores.BACKBONES (RaMIA's point attacks)
FEATURE_PARAMETERS = ("features",)  # mimirlib.core.dataset_inference.FEATURES (dataset inference's features)
DOMAIN_PARAMETERS = ("domains", "domain", "demo_domain")  # the lab's domains, or the MIMIR configs
MODEL_PARAMETERS = ("models", "reference_models", "model", "reference_model")  # hub names or local folders
LAB_MODEL_PARAMETERS = ("targets", "beyond_target")  # one-epoch lab targets by name


def _names(value) -> list[str]:
    """The names a parameter value holds: a list, one string, or a comma-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


def _unknown_name(name, value, known, what, where, origin, among="known") -> None:
    """Raise naming the first of ``value``'s names that is not in ``known``, and listing those."""
    for v in _names(value):
        if v not in known:
            raise ParameterError(
                f"{where}parameter {name!r}{origin}: unknown {what} {v!r} ({among}: {', '.join(sorted(known))})"
            )


def check_attacks(params: Mapping[str, Any], *, notebook: str | None = None, sources=None) -> None:
    """Raise ``ParameterError`` for an attack (or RaMIA backbone, dataset-inference feature, weights' dtype or
    signals engine) that no registry knows."""
    where, origin = where_origin(notebook, sources)
    if any(params.get(n) is not None for n in ATTACK_PARAMETERS):
        from mimirlib.core.attacks import ATTACKS

        for n in ATTACK_PARAMETERS:
            _unknown_name(n, params.get(n), ATTACKS, "attack", where, origin(n))
    if any(params.get(n) is not None for n in BACKBONE_PARAMETERS):
        from mimirlib.core.range_scores import BACKBONES

        for n in BACKBONE_PARAMETERS:
            _unknown_name(n, params.get(n), BACKBONES, "backbone", where, origin(n))
    if any(params.get(n) is not None for n in FEATURE_PARAMETERS):
        from mimirlib.core.dataset_inference import FEATURES

        for n in FEATURE_PARAMETERS:
            _unknown_name(n, params.get(n), FEATURES, "feature", where, origin(n))
    if params.get("dtype") is not None:  # the weights' precision (mimirlib.core.models.pick_dtype)
        from mimirlib.core.models import DTYPE_CHOICES, DTYPES

        if params["dtype"] not in DTYPES:
            raise ParameterError(
                f"{where}parameter 'dtype'{origin('dtype')}: unknown dtype {params['dtype']!r} (use {DTYPE_CHOICES})"
            )
    if any(params.get(n) is not None for n in ENGINE_PARAMETERS):
        from mimirlib.core.engines import EngineParameterError, engine_from

        try:  # the engine's name, and the ray_* values' forms (beside engine="ray" only)
            engine_from(params)
        except EngineParameterError as e:
            raise ParameterError(f"{where}parameter {e.name!r}{origin(e.name)}: {e}") from None


def _lab_config(profile: str, profiles_dir=None) -> dict | None:
    """The profile's ``lab:`` section (what a lab of that profile is built from), or None."""
    profiles_dir = resolve_path(profiles_dir) if profiles_dir else PROFILES_DIR
    try:
        lab = load_profile(profile, profiles_dir).get("lab")
    except (OSError, ValueError, yaml.YAMLError, AttributeError):
        return None  # an unknown or broken profile is reported by resolve.profile_params
    return lab if isinstance(lab, dict) else None


def check_domains(
    params: Mapping[str, Any], profile: str, *, notebook: str | None = None, sources=None, profiles_dir=None
) -> None:
    """Raise ``ParameterError`` for a domain the run's benchmarks cannot hold.

    Knowable without building anything: the lab's domains (its profile's ``lab.domains``) when
    the benchmarks are the lab's, MIMIR's configs when they are the MIMIR dataset by name. A
    local folder of benchmarks is not listed here: the chapter reports what it lacks.
    """
    from mimirlib.core.hub import CONFIGS, MIMIR_REPO

    where, origin = where_origin(notebook, sources)
    source = params.get("benchmark_source")
    lab = _lab_config(profile, profiles_dir)
    for n in DOMAIN_PARAMETERS:
        if params.get(n) is None:
            continue
        if source is None or n == "demo_domain":  # the demonstration always uses the lab
            if lab and lab.get("domains"):
                _unknown_name(n, params[n], lab["domains"], "domain", where, origin(n), f"lab of profile {profile}")
        elif source == MIMIR_REPO:
            _unknown_name(n, params[n], CONFIGS, "domain", where, origin(n), "MIMIR's configs")


def check_models(
    params: Mapping[str, Any],
    profile: str,
    *,
    notebook: str | None = None,
    sources=None,
    profiles_dir=None,
    cwd=None,
) -> None:
    """Raise ``ParameterError`` for a local model folder that does not exist or a lab target the
    profile's lab does not train. Hub names are not looked up (that needs the network); relative
    paths are taken from ``cwd`` (the kernel's working directory)."""
    from mimirlib.core.hub import is_local_path
    from mimirlib.lab.layout import target_name

    where, origin = where_origin(notebook, sources)
    base = resolve_path(cwd) if cwd else REPO_ROOT
    for n in MODEL_PARAMETERS:
        value = params.get(n)
        for v in [value] if isinstance(value, str) else _names(value):  # a path may hold a comma
            if is_local_path(v) and not resolve_path(Path(v).expanduser(), base).exists():
                raise ParameterError(
                    f"{where}parameter {n!r}{origin(n)}: no model folder {v!r} "
                    f"(a local path, from {base}; hub names look like org/name)"
                )
    lab = _lab_config(profile, profiles_dir)
    if lab and isinstance(lab.get("targets"), list):
        known = [target_name(t["name"]) for t in lab["targets"] if isinstance(t, dict) and "name" in t]
        for n in LAB_MODEL_PARAMETERS:
            _unknown_name(n, params.get(n), known, "lab target", where, origin(n), f"lab of profile {profile}")


def check_names(
    params: Mapping[str, Any],
    profile: str,
    *,
    notebook: str | None = None,
    sources=None,
    profiles_dir=None,
    cwd=None,
) -> None:
    """Every name check (attacks, domains, models) of one notebook's parameters."""
    check_attacks(params, notebook=notebook, sources=sources)
    check_domains(params, profile, notebook=notebook, sources=sources, profiles_dir=profiles_dir)
    check_models(params, profile, notebook=notebook, sources=sources, profiles_dir=profiles_dir, cwd=cwd)
