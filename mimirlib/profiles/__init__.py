"""Named parameter sets: ``smoke`` (the whole book in minutes, for tests), ``lab`` (the book's
default) and ``paper`` (the paper's models and data by hub name; needs network and a GPU).

Each ``<name>.yml`` holds ``lab:`` (how to build the embedded lab; absent for ``paper``) and
``notebooks:`` (parameters per notebook, validated by :mod:`mimirlib.runner`).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml

PROFILES = ("smoke", "lab", "paper")


@lru_cache(maxsize=None)
def _read(name: str) -> str:
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; choose one of {list(PROFILES)}")
    return resources.files(__package__).joinpath(f"{name}.yml").read_text(encoding="utf-8")


def load_profile(name: str) -> dict:
    """A fresh copy of profile ``name`` as a dict."""
    return yaml.safe_load(_read(name)) or {}
