"""Named parameter sets: ``smoke`` (the whole book in minutes, for tests), ``lab`` (the book's
default) and ``paper`` (the paper's models and data by hub name; needs network and a GPU).

Each ``<name>.yml`` holds ``lab:`` (how to build the embedded lab; absent for ``paper``) and
``notebooks:`` (parameters per notebook, validated by :mod:`mimirlib.runner`). Every profile,
params file and ``-p`` value is parsed by `load_yaml`, one rule everywhere.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml

__all__ = ["PROFILES", "load_profile", "load_yaml"]

PROFILES = ("smoke", "lab", "paper")


class _FloatLoader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e-3`` as a float (YAML 1.1 reads it as a string)."""


_FloatLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def load_yaml(text: str):
    """Parse YAML text the project's one way: safe types, and ``1e-3`` / ``5E+4`` are floats
    (YAML 1.2's rule; PyYAML's YAML 1.1 wants ``1.0e-3``). Raises ``yaml.YAMLError``."""
    return yaml.load(text, Loader=_FloatLoader)


@lru_cache(maxsize=None)
def _read(name: str) -> str:
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; choose one of {list(PROFILES)}")
    return resources.files(__package__).joinpath(f"{name}.yml").read_text(encoding="utf-8")


def load_profile(name: str, profiles_dir: str | Path | None = None) -> dict:
    """A fresh copy of profile ``name`` as a dict: the packaged ``<name>.yml``, or the one in
    ``profiles_dir`` (the runner's ``--profiles-dir``). Parsed by `load_yaml`."""
    if profiles_dir is None:
        text = _read(name)
    else:
        text = (Path(profiles_dir) / f"{name}.yml").read_text(encoding="utf-8")
    return load_yaml(text) or {}
