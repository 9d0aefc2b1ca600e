"""Building the embedded lab: splits, tokenizer, target suite, reference models, benchmarks.

Every stage writes into ``<cache>/lab/<profile>-<key>/`` where ``key`` hashes the lab config,
so an unchanged config reuses everything and a changed one never mixes old artifacts in.
Stages are skipped when their output exists and resumed when interrupted (training keeps a
``.partial`` folder with a resume point); a model another lab folder trained the same way is taken
from there (:mod:`mimirlib.lab.reuse`), so a change that touches no model's training retrains none.
``python -m mimirlib.lab.build --profile lab`` builds it; notebooks call :func:`ensure_lab`, which
builds what is missing.

The stages live in :mod:`mimirlib.lab.stages` (data, benchmarks, neighbours, manifest) and
:mod:`mimirlib.lab.jobs` (the models and their training); the layout and names of a built lab in
:mod:`mimirlib.lab.layout`. This module runs them in order.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from mimirlib.paths import cache_root
from mimirlib.profiles import load_profile
from mimirlib.progress import log
from mimirlib.lab import reuse
from mimirlib.lab.jobs import lab_jobs, rebuild_estimate, reuse_trained, train_models, training_jobs
from mimirlib.lab.layout import Lab, config_key, expected_models, resolve_train_dtype
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


def build_lab(profile: str = "lab", cfg: dict | None = None, root: Path | None = None) -> Lab:
    """Build (or complete) the lab of ``profile``: corpus and tokenizer, benchmark selection, every
    model of :func:`training_jobs`, the benchmark files, the neighbours, then the manifest."""
    cfg = resolve_train_dtype(cfg or load_profile(profile)["lab"])
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


def ensure_lab(profile: str = "lab") -> Lab:
    """The built lab for ``profile``, building whatever is missing."""
    return build_lab(profile)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Build the embedded lab (corpus splits, tokenizer, models, benchmarks).")
    ap.add_argument("--profile", default="lab", help="smoke (minutes, for tests) or lab (the book's default)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    lab = build_lab(args.profile)
    m = lab.manifest
    for name, t in m["timings"].items():
        print(f"{name:40s} {t['seconds']:8.1f} s  peak RSS {t['peak_rss_mb']:6d} MB")
    print(f"lab ready at {lab.root} ({time.perf_counter() - t0:.0f} s this run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
