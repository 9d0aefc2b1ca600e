"""What a profile costs in compute, counted from its own parameters (the "Running at scale" page).

Every text a chapter scores is one forward pass of each model that scores it: the signals
engine computes LOSS, zlib, Min-K% and Min-K%++ from one pass, the reference attack adds one
pass of the reference model, and the neighbourhood attack one pass per neighbour. So a
chapter's work is a list of :class:`Work` items (model, which texts, how many), read off the
same profile keys the chapter reads. A forward pass over T tokens of a model with N parameters
costs about ``2 * N * T`` FLOPs; GPU-hours follow from a GPU's peak rate and a utilisation.

The signal cache is keyed by model and text, so texts two chapters share (the natural
benchmarks, the members every split reuses) are computed once: :func:`unique_work` counts each
(model, texts) group once. The paper profile's neighbours come with the MIMIR dataset, so no
masked-LM pass is counted for them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

# The MIMIR dataset (RESOURCES section 4): 1,000 member/non-member pairs per domain and split,
# 25 masked-LM neighbours per text, texts of <= 200 words that fit in 512 tokens.
MIMIR_PAIRS = 1000
MIMIR_NEIGHBOURS = 25
MAX_TOKENS_PER_TEXT = 512
# Dense bfloat16 peak rates from the vendors' datasheets (FLOP/s, no sparsity).
GPU_PEAK_FLOPS = {"A100 (bf16)": 312e12, "H100 SXM (bf16)": 989e12}
DEFAULT_UTILISATION = 0.4  # a stated assumption: batched inference of short texts rarely beats it
CHAPTERS = ("main_results", "ngram_overlap", "temporal_shift", "modified_members")


@dataclass(frozen=True)
class Work:
    """``texts`` forward passes of ``model`` over the texts named by ``group`` (a tuple that is
    the same wherever the same texts are scored: the signal cache's unit of reuse)."""

    chapter: str
    model: str
    group: tuple
    texts: int


def model_params(name: str) -> float:
    """Nominal parameter count read from a model's name (``pythia-1.4b-deduped`` -> 1.4e9):
    the size the name advertises, which is what a cost estimate needs."""
    m = re.search(r"(?<![\w.])(\d+(?:\.\d+)?)([mb])(?![a-z])", str(name).rsplit("/", 1)[-1].lower())
    if not m:
        raise ValueError(f"model {name!r}: no size like '160m' or '6.9b' in its name")
    return float(m.group(1)) * (1e6 if m.group(2) == "m" else 1e9)


def _models(p: Mapping) -> list[str]:
    return list(p.get("models") or [])


def _refs(p: Mapping, attacks=None) -> list[str]:
    if attacks is not None and "ref" not in attacks:
        return []
    return list(p.get("reference_models") or [])


def _pairs(p: Mapping, key: str = "n_samples") -> int:
    n = p.get(key)
    return MIMIR_PAIRS if n is None else min(int(n), MIMIR_PAIRS)


def main_results(p: Mapping) -> list[Work]:
    """Every domain's natural split, members and non-members, for every target; the reference
    model once per text; each target again over the neighbours of ``ne_samples`` pairs."""
    out, split, attacks = [], p["split"], p.get("attacks") or ()
    n = _pairs(p)
    ne_pairs = min(n, MIMIR_PAIRS if p.get("ne_samples") is None else int(p["ne_samples"]))
    for d in p["domains"]:
        for side in ("members", "nonmembers"):
            for m in _models(p) + _refs(p, attacks):
                out.append(Work("main_results", m, (d, split, side), n))
            if "ne" in attacks:
                for m in _models(p):
                    out.append(Work("main_results", m, (d, split, side, "neighbours"), ne_pairs * MIMIR_NEIGHBOURS))
    return out


def ngram_overlap(p: Mapping) -> list[Work]:
    """The natural split and the low-overlap split (same members, other non-members)."""
    out, attacks = [], p.get("attacks") or ()
    n = _pairs(p)
    for d in p["domains"]:
        groups = [(d, p["natural_split"], "members"), (d, p["natural_split"], "nonmembers")]
        groups.append((d, p["low_overlap_split"], "nonmembers"))
        for g in groups:
            for m in _models(p) + _refs(p, attacks):
                out.append(Work("ngram_overlap", m, g, n))
    return out


def temporal_shift(p: Mapping) -> list[Work]:
    """One set of members, the natural non-members and each later-dated split's non-members."""
    d, out = p["domain"], []
    n = _pairs(p)
    groups = [(d, p["natural_split"], "members"), (d, p["natural_split"], "nonmembers")]
    groups += [(p["shifted_config"], s, "nonmembers") for s in p["shifted_splits"]]
    for g in groups:
        for m in _models(p) + _refs(p):
            out.append(Work("temporal_shift", m, g, n))
    return out


def modified_members(p: Mapping) -> list[Work]:
    """``members_per_domain`` members, each with ``trials`` random-edit copies per edit count and
    its neighbours (the semantic modification), plus the unmodified members and non-members, all
    scored by the target and the reference."""
    out, split = [], p.get("split", "ngram_13_0.8")
    per = int(p["members_per_domain"])
    variants = len(p["edits"]) * int(p["trials"])
    neighbours = MIMIR_NEIGHBOURS if p.get("neighbors_per_member") is None else int(p["neighbors_per_member"])
    for d in p["domains"]:
        for m in _models(p) + _refs(p):
            out.append(Work("modified_members", m, (d, split, "members"), MIMIR_PAIRS))
            out.append(Work("modified_members", m, (d, split, "nonmembers"), MIMIR_PAIRS))
            out.append(Work("modified_members", m, (d, split, "random edits", variants), per * variants))
            out.append(Work("modified_members", m, (d, split, "members", "neighbours"), per * neighbours))
    return out


_COUNTERS = {
    "main_results": main_results,
    "ngram_overlap": ngram_overlap,
    "temporal_shift": temporal_shift,
    "modified_members": modified_members,
}


def profile_work(profile: Mapping) -> pd.DataFrame:
    """One row per :class:`Work` item of every chapter the profile configures that the cost
    model knows (``chapter``, ``model``, ``group``, ``texts``)."""
    rows = []
    for chapter, params in (profile.get("notebooks") or {}).items():
        if chapter in _COUNTERS:
            rows += [w.__dict__ for w in _COUNTERS[chapter](params or {})]
    if not rows:
        raise ValueError(f"profile configures none of the chapters the cost model counts ({', '.join(CHAPTERS)})")
    return pd.DataFrame(rows, columns=["chapter", "model", "group", "texts"])


def unique_work(work: pd.DataFrame) -> pd.DataFrame:
    """``work`` with each (model, group) counted once, at its largest count (a chapter that scores
    the first k texts of a group reuses another's larger run): what runs with the shared cache."""
    keyed = work.assign(key=work.group.map(repr))
    out = keyed.groupby(["model", "key"], sort=False).agg(group=("group", "first"), texts=("texts", "max"))
    return out.reset_index()[["model", "group", "texts"]]


def flops(passes, params, tokens_per_text: float = MAX_TOKENS_PER_TEXT):
    """Forward-pass FLOPs: ``2 * params`` per token, ``tokens_per_text`` tokens per pass."""
    return passes * tokens_per_text * 2 * params


def gpu_hours(total_flops, peak_flops: float, utilisation: float = DEFAULT_UTILISATION):
    if not 0 < utilisation <= 1:
        raise ValueError(f"utilisation must be in (0, 1], got {utilisation}")
    return total_flops / (peak_flops * utilisation) / 3600


def _costed(df: pd.DataFrame, tokens_per_text: float, utilisation: float) -> pd.DataFrame:
    df = df.copy()
    df["parameters"] = df.model.map(model_params)
    df["FLOPs"] = flops(df["forward passes"], df.parameters, tokens_per_text)
    for gpu, peak in GPU_PEAK_FLOPS.items():
        df[f"GPU-hours, {gpu}"] = gpu_hours(df.FLOPs, peak, utilisation)
    return df


def chapter_table(
    work: pd.DataFrame, tokens_per_text: float = MAX_TOKENS_PER_TEXT, utilisation: float = DEFAULT_UTILISATION
) -> pd.DataFrame:
    """Per chapter and model: forward passes, FLOPs and GPU-hours, each chapter run on its own
    (an empty signal cache)."""
    g = work.groupby(["chapter", "model"], sort=False).texts.sum().rename("forward passes").reset_index()
    return _costed(g, tokens_per_text, utilisation)


def model_table(
    work: pd.DataFrame, tokens_per_text: float = MAX_TOKENS_PER_TEXT, utilisation: float = DEFAULT_UTILISATION
) -> pd.DataFrame:
    """Per model: forward passes over all chapters with the shared cache (each text once), FLOPs
    and GPU-hours, and a ``total`` row."""
    u = unique_work(work)
    g = u.groupby("model", sort=False).texts.sum().rename("forward passes").reset_index()
    g = _costed(g, tokens_per_text, utilisation)
    total = {"model": "total", "forward passes": g["forward passes"].sum(), "parameters": float("nan")}
    total |= {c: g[c].sum() for c in g.columns if c == "FLOPs" or c.startswith("GPU-hours")}
    return pd.concat([g, pd.DataFrame([total])], ignore_index=True)


def _size(params: float) -> str:
    if params != params:  # NaN: the total row
        return ""
    return f"{params / 1e9:g}B" if params >= 1e9 else f"{params / 1e6:g}M"


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """A chapter or model table for the page: model names without their owner, sizes as 160M /
    6.9B, passes with thousands separators, FLOPs in scientific notation, GPU-hours to 0.1."""
    out = table.copy()
    out["model"] = out.model.map(lambda m: str(m).rsplit("/", 1)[-1])
    out["parameters"] = out.parameters.map(_size)
    out["forward passes"] = out["forward passes"].map(lambda v: f"{int(v):,}")
    out["FLOPs"] = out.FLOPs.map(lambda v: f"{v:.2e}")
    for c in out.columns:
        if c.startswith("GPU-hours"):
            out[c] = out[c].map(lambda v: f"{v:,.1f}")
    return out
