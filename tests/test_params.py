"""A chapter's parameters object (derived from its parameters cell), the scoring options passed
whole, and the one helper that builds Min-K%'s attack parameters."""

import types

import pytest

from mimirlib.core.attacks import min_k_params
from mimirlib.core.engines import RayEngine
from mimirlib.core.signals import ScoringOptions, SignalCache
from mimirlib.experiments.params import Params


def test_from_cell_keeps_the_cells_plain_values_and_nothing_else():
    ns = {
        "profile": "lab", "min_k": 0.2, "domains": ["code", "math"], "window": None, "flags": {"a": 1},
        "np": types, "exp": types.ModuleType("exp"), "run": lambda: None, "In": ["", "x = 1"],
        "Out": {}, "get_ipython": object, "_": 3, "__name__": "__main__", "Lab": type("Lab", (), {}),
    }  # fmt: skip
    p = Params.from_cell(ns)
    assert dict(p) == {"profile": "lab", "min_k": 0.2, "domains": ["code", "math"], "window": None, "flags": {"a": 1}}
    assert p.min_k == 0.2 and p["profile"] == "lab" and len(p) == 5


def test_params_are_read_only_and_name_a_missing_parameter():
    p = Params({"profile": "smoke"})
    with pytest.raises(AttributeError, match="'seeds' is not set"):
        p.seeds
    with pytest.raises(AttributeError, match="read-only"):
        p.profile = "lab"
    q = p.replace(profile="lab", seed=1)
    assert (p.profile, q.profile, q.seed) == ("smoke", "lab", 1)


def test_scoring_options_come_from_the_cell_with_defaults_for_what_it_does_not_declare(tmp_path):
    cache = SignalCache(tmp_path)
    p = Params({"window": 128, "batch_size": 4, "dtype": "bfloat16", "engine": "ray", "profile": "lab"})
    assert p.scoring(cache=cache) == ScoringOptions(
        window=128, stride=None, batch_size=4, dtype="bfloat16", engine=RayEngine(), cache=cache
    )
    assert Params({}).scoring() == ScoringOptions()
    cell = {"engine": "ray", "ray_address": "auto", "ray_workers": 4, "ray_gpus_per_worker": 1, "ray_timeout": 3}
    assert Params(cell).scoring().engine == RayEngine(address="auto", workers=4, gpus_per_worker=1, connect_timeout_s=3)


def test_signal_kwargs_are_compute_signals_keywords_without_the_dtype(tmp_path):
    cache = SignalCache(tmp_path)
    o = ScoringOptions(window=64, stride=32, batch_size=2, dtype="float32", engine="local", cache=cache)
    assert o.signal_kwargs() == dict(cache=cache, window=64, stride=32, batch_size=2, engine="local", ray_address=None)
    assert o.replace(window=16).window == 16 and o.window == 64


def test_min_k_params_set_one_k_for_both_min_k_attacks():
    assert min_k_params(0.1) == {"min_k": {"k": 0.1}, "min_k_pp": {"k": 0.1}}
    assert Params({"min_k": 0.3}).attack_params() == min_k_params(0.3)
    assert Params({"profile": "lab"}).attack_params() == {}
