"""Building the embedded lab: splits, tokenizer, target suite, reference models, benchmarks.

Every stage writes into ``<cache>/lab/<profile>-<key>/`` where ``key`` hashes the lab config,
so an unchanged config reuses everything and a changed one never mixes old artifacts in.
Stages are skipped when their output exists and resumed when interrupted (training keeps a
``.partial`` folder with a resume point); a model another lab folder trained the same way is taken
from there (:mod:`mimirlib.lab.reuse`), so a change that touches no model's training retrains none.
``python -m mimirlib.lab.build --profile lab`` builds it; notebooks call :func:`ensure_lab` (a chapter's
parameters: :func:`lab_for`), which builds what is missing. ``--draw N`` (a chapter's ``draw`` parameter)
builds the lab drawn with seed N instead of the profile's (:func:`mimirlib.profiles.load_profile`): its own
folder, as its config differs.

The stages live in :mod:`mimirlib.lab.stages` (data, benchmarks, neighbours, manifest) and
:mod:`mimirlib.lab.jobs` (the models and their training); the layout and names of a built lab in
:mod:`mimirlib.lab.layout`. This module runs them in order.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from mimirlib.paths import cache_root
from mimirlib.profiles import load_profile
from mimirlib.progress import log
from mimirlib.lab import reuse
from mimirlib.lab.jobs import lab_jobs, rebuild_estimate, reuse_trained, train_models, training_jobs
from mimirlib.lab.layout import (
    Lab,
    config_key,
    control_seeds,
    expected_models,
    replicate_training_seed,
    resolve_train_dtype,
)
from mimirlib.lab.stages import (
    StageLog,
    atomic_json,
    export_benchmarks,
    export_ground_truth,
    natural_copies,
    prepare_corpus,
    select_benchmarks,
    write_manifest,
)


def lab_config(profile: str = "lab", draw: int | None = None) -> dict:
    """The ``lab:`` section of ``profile``, drawn with seed ``draw`` (None: the profile's own seed).
    ValueError (one line) for an unknown profile, one without a lab, a bad draw or replicate seed."""
    cfg = load_profile(profile, draw=draw).get("lab")
    if not isinstance(cfg, dict):
        raise ValueError(f"profile {profile!r} has no embedded lab (its chapters name their models and data)")
    rep = cfg.get("replicates") or {}
    for s in [*rep.get("seeds", []), *rep.get("dedup_seeds", [])]:
        replicate_training_seed(cfg, s)  # before anything is built: a replicate seed below 1 is named
    if cfg.get("recency_control"):
        control_seeds(cfg)  # and a control seed its target has no replicate of
    return cfg


def build_lab(profile: str = "lab", cfg: dict | None = None, root: Path | None = None, draw: int | None = None) -> Lab:
    """Build (or complete) the lab of ``profile`` (drawn with seed ``draw``, see :func:`lab_config`):
    corpus and tokenizer, benchmark selection, every model of :func:`training_jobs`, the benchmark
    files, the neighbours, then the manifest. ``cfg`` (a lab section as is) and ``draw`` exclude each other."""
    if cfg is not None and draw is not None:
        raise ValueError("build_lab: give a lab config or a draw of the profile's, not both")
    cfg = resolve_train_dtype(cfg or lab_config(profile, draw))
    root = root or cache_root() / "lab" / f"{profile}-{config_key(cfg)}"
    root.mkdir(parents=True, exist_ok=True)
    lab = Lab(root, cfg)
    old = lab.manifest if (root / "lab.json").exists() else None
    models = expected_models(cfg)
    complete = all(lab.model_dir(m).exists() for m in models) and set(models) <= set(reuse.recorded(root))
    if old and old["config"] == cfg and complete:
        return lab
    # A lab built by older code may lack a model that newer code adds, or the models' training
    # fingerprints (mimirlib.lab.reuse): the stages below skip whatever exists and add what is missing.
    stages = StageLog(profile, dict(old["timings"]) if old and old["config"] == cfg else {})
    c = prepare_corpus(lab, stages)
    with stages.stage("select benchmarks"):
        sel_file = root / "selection.json"
        if not sel_file.exists():
            atomic_json(sel_file, select_benchmarks(cfg, c.splits, c.texts))
        selection = json.loads(sel_file.read_text())
    with stages.stage("benchmarks"):
        export_benchmarks(lab, selection, c.texts)
    jobs = training_jobs(cfg, c, selection)
    prints = reuse_trained(lab, c, jobs)  # first: a model another lab trained the same way is not to train
    doc_tokens = float(np.mean([len(t) + 1 for t in c.train_tokens])) if c.train_tokens else 0.0
    estimate = rebuild_estimate(lab, jobs, doc_tokens, lab_jobs())
    if estimate:
        log(f"lab[{profile}] {estimate}")
    train_models(lab, c, jobs, stages, lab_jobs(), prints)  # and the neighbours
    with stages.stage("ground truth"):
        export_ground_truth(lab, selection, c.dates, natural_copies(c.train_ids, cfg))
    write_manifest(lab, profile, c.splits, stages.timings)
    return lab


def ensure_lab(profile: str = "lab", draw: int | None = None) -> Lab:
    """The built lab for ``profile`` (drawn with seed ``draw``; None: the profile's), building whatever is missing."""
    return build_lab(profile, draw=draw)


def lab_for(p: Mapping) -> Lab:
    """The lab a chapter's parameters read: its ``profile``, drawn with its ``draw`` when it declares one."""
    return ensure_lab(p["profile"], p.get("draw"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Build the embedded lab (corpus splits, tokenizer, models, benchmarks).")
    ap.add_argument("--profile", default="lab", help="smoke (minutes, for tests) or lab (the book's default)")
    ap.add_argument(
        "--draw", type=int, default=None, metavar="N", help="the lab drawn with seed N, not the profile's own seed"
    )
    args = ap.parse_args(argv)
    try:  # inputs checked before anything is built
        cfg = lab_config(args.profile, args.draw)
    except ValueError as e:
        print(f"mimirlib.lab.build: error: {e}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    lab = build_lab(args.profile, cfg)
    m = lab.manifest
    for name, t in m["timings"].items():
        print(f"{name:40s} {t['seconds']:8.1f} s  peak RSS {t['peak_rss_mb']:6d} MB")
    print(f"lab ready at {lab.root} ({time.perf_counter() - t0:.0f} s this run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
