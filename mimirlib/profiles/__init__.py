"""Named parameter sets: ``smoke`` (the whole book in minutes, for tests), ``lab`` (the book's
default) and ``paper`` (the paper's models and data by hub name; needs network and a GPU).

Each ``<name>.yml`` holds ``lab:`` (how to build the embedded lab; absent for ``paper``) and
``notebooks:`` (parameters per notebook, validated by :mod:`mimirlib.runner`). Every profile,
params file and ``-p`` value is parsed by `load_yaml`, one rule everywhere.

A profile's **draw** is the seed its lab is drawn with (``lab.seed``: splits, selection, initialisation
and data order). ``load_profile(name, draw=N)`` reads the profile with another draw: the value of its
``&draw`` YAML anchor becomes N, so every value the profile ties to the draw with ``*draw`` follows it (the
packaged profiles tie RaMIA beyond text's seed to it); a profile without the anchor gets ``lab.seed = N``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml

__all__ = ["PROFILES", "check_draw", "load_profile", "load_yaml"]

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


# The anchor a profile names its draw with (``seed: &draw 0``); its aliases (``*draw``) follow the draw.
_DRAW_ANCHOR = re.compile(r"^(\s*[\w-]+:\s*&draw\s+)(\d+)(?=\s*(?:#|$))", re.M)
_ANY_DRAW_ANCHOR = re.compile(r"^[^#\n]*&draw\b", re.M)  # the anchor anywhere outside a comment


def check_draw(draw) -> int | None:
    """``draw`` itself when it is None or an integer >= 0; otherwise ValueError naming it (one line)."""
    if draw is None or (isinstance(draw, int) and not isinstance(draw, bool) and draw >= 0):
        return draw
    raise ValueError(f"draw {draw!r}: a lab draw is a seed, an integer >= 0 (or None for the profile's own)")


def load_profile(name: str, profiles_dir: str | Path | None = None, draw: int | None = None) -> dict:
    """A fresh copy of profile ``name`` as a dict: the packaged ``<name>.yml``, or the one in
    ``profiles_dir`` (the runner's ``--profiles-dir``). Parsed by `load_yaml`. ``draw``: the profile
    with that lab draw (see the module's docstring); ValueError for a profile without a lab."""
    if profiles_dir is None:
        text = _read(name)
    else:
        text = (Path(profiles_dir) / f"{name}.yml").read_text(encoding="utf-8")
    if check_draw(draw) is None:
        return load_yaml(text) or {}
    present = len(_ANY_DRAW_ANCHOR.findall(text))
    text, anchored = _DRAW_ANCHOR.subn(lambda m: f"{m.group(1)}{draw}", text)
    if present > 1:
        raise ValueError(f"profile {name!r} defines the anchor &draw {present} times; a draw needs one")
    if present > anchored:
        raise ValueError(f"profile {name!r}: its anchor &draw must sit on a block line `key: &draw <integer>`")
    data = load_yaml(text) or {}
    if not isinstance(data.get("lab"), dict):
        raise ValueError(f"profile {name!r} has no embedded lab to draw again (a draw is the lab's seed)")
    if not anchored:
        data["lab"]["seed"] = draw
    if data["lab"].get("seed") != draw:
        raise ValueError(f"profile {name!r}: its anchor &draw is not the lab's seed (lab: seed: &draw 0)")
    return data
