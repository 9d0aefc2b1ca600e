"""Where a run's parameter values come from: the profile, then a params file, then ``-p`` overrides."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from mimirlib.profiles import load_profile, load_yaml
from mimirlib.runner.base import PROFILES_DIR, ParameterError, notebook_file, resolve_path
from mimirlib.runner.params import notebook_parameters


def _load_yaml_file(path: Path, what: str):
    """The mapping in a YAML (or ``.json``: JSON) file; every way of failing is one ParameterError line."""
    if not path.exists():
        raise ParameterError(f"{what} {path}: no such file")
    if not path.is_file():
        raise ParameterError(f"{what} {path}: not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ParameterError(f"{what} {path}: cannot read it: {e}".replace("\n", " ")) from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as e:
            raise ParameterError(f"{what} {path}: invalid JSON: {e}") from None
    try:
        return load_yaml(text) or {}
    except yaml.YAMLError as e:
        raise ParameterError(f"{what} {path}: invalid YAML: {' '.join(str(e).split())}") from None


def profile_params(stem: str, profile: str, profiles_dir: Path, draw: int | None = None) -> dict[str, Any]:
    """The profile's ``notebooks.<stem>`` entry (``{}`` when it has none), read with lab draw ``draw``
    (None: the profile's own; see :func:`mimirlib.profiles.load_profile`)."""
    path = profiles_dir / f"{profile}.yml"
    if not path.is_file():
        avail = ", ".join(p.stem for p in sorted(profiles_dir.glob("*.yml"))) or "none"
        raise ParameterError(f"unknown profile {profile!r}: no {path} (available: {avail})")
    try:
        data = load_profile(profile, profiles_dir, draw=draw)
    except yaml.YAMLError as e:
        raise ParameterError(f"profile {path}: invalid YAML: {e}".replace("\n", " ")) from None
    except ValueError as e:  # a draw of a profile without a lab, or a bad draw
        raise ParameterError(f"--draw: {e}") from None
    nbs = data.get("notebooks") if isinstance(data, dict) else None
    if nbs is None:
        return {}
    if not isinstance(nbs, dict):
        raise ParameterError(f"profile {path}: 'notebooks' must be a mapping of notebook stems")
    entry = nbs.get(stem) or {}
    if not isinstance(entry, dict):
        raise ParameterError(f"profile {path}: notebooks.{stem} must be a mapping")
    return dict(entry)


def _params_file_entries(params_file: Path, stem: str) -> tuple[dict[str, Any], bool]:
    """(params, nested): a params file is either a flat ``{param: value}`` mapping
    or, like a profile, ``notebooks: {stem: {param: value}}`` (for ``--all``)."""
    data = _load_yaml_file(params_file, "params file")
    if not isinstance(data, dict):
        raise ParameterError(f"params file {params_file}: expected a mapping")
    if isinstance(data.get("notebooks"), dict):
        entry = data["notebooks"].get(stem) or {}
        if not isinstance(entry, dict):
            raise ParameterError(f"params file {params_file}: notebooks.{stem} must be a mapping")
        return dict(entry), True
    return dict(data), False


def parse_overrides(overrides) -> dict[str, Any]:
    """``["k=0.1", "domains=[code]"]`` -> typed values (YAML), or a mapping as is."""
    if overrides is None:
        return {}
    if isinstance(overrides, Mapping):
        return dict(overrides)
    out = {}
    for item in overrides:
        name, sep, raw = str(item).partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise ParameterError(f"bad override {item!r}: expected -p name=value")
        try:
            out[name] = load_yaml(raw) if raw.strip() else ""
        except yaml.YAMLError:
            raise ParameterError(
                f"bad override {item!r}: value is not valid YAML (quote it, e.g. -p 'name=\"text\"')"
            ) from None
    return out


def resolve_with_sources(
    stem, profile, params_file=None, overrides=None, *, declared, profiles_dir=None, only_declared=False, draw=None
):
    """Merged params and where each came from (for error messages): ``(params, sources)``. ``draw``
    (``--draw``): the profile read with that lab draw, and ``draw`` set in a notebook that declares it."""
    profiles_dir = resolve_path(profiles_dir) if profiles_dir else PROFILES_DIR
    params: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def merge(values, source, lenient=False):
        for k, v in values.items():
            if lenient and k not in declared:
                continue
            params[k] = v
            sources[k] = source

    merge(profile_params(stem, profile, profiles_dir, draw), f"profile {profile}")
    if params_file is not None:
        pf = resolve_path(params_file, Path.cwd())
        values, nested = _params_file_entries(pf, stem)
        merge(values, f"params file {pf}", lenient=only_declared and not nested)
    merge(parse_overrides(overrides), "-p", lenient=only_declared)
    if "profile" in declared:
        if "profile" in params and params["profile"] != profile:
            raise ParameterError(f"parameter 'profile' is set by --profile ({profile!r}), not by {sources['profile']}")
        params["profile"] = profile
        sources["profile"] = "--profile"
    if "draw" in declared:
        if params.get("draw") is not None and params["draw"] != draw:
            raise ParameterError(
                f"parameter 'draw' is set by --draw (mimir-run --draw {params['draw']}), not by {sources['draw']}"
            )
        if draw is not None:
            params["draw"] = draw
            sources["draw"] = "--draw"
    return params, sources


def resolve_params(
    notebook_stem: str,
    profile: str,
    params_file=None,
    overrides=None,
    *,
    notebooks_dir="notebooks",
    profiles_dir=None,
    declared: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Parameters for one notebook: profile, then params file, then ``-p`` overrides.

    ``overrides`` is a list of ``name=value`` strings (values parsed as YAML, so
    ``k=0.1`` is a float and ``domains=[code]`` a list) or a mapping.
    ``profile=<profile>`` is added when the notebook declares ``profile``.
    """
    if declared is None:
        declared = notebook_parameters(notebook_file(notebook_stem, notebooks_dir))
    return resolve_with_sources(
        notebook_stem, profile, params_file, overrides, declared=declared, profiles_dir=profiles_dir
    )[0]
