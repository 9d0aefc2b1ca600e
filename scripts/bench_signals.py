"""Benchmark: mimirlib's signal engine against a faithful re-implementation of the reference's scoring loop.

The baseline is :mod:`scripts.reference_loop`: the reference implementation's loop for LOSS, zlib,
Min-K%, Min-K%++ and the reference attack (one text at a time, its 512/256 sliding windows, one target
pass shared by the loss-based attacks plus one reference-model pass, the full log-softmax read by a
per-token ``.item()`` loop). The engine is ``compute_signals`` (target and reference model) followed by
``attacks.score`` for the same five attacks. Both run on the lab's largest target and its reference
model over the same texts, in one run, for float32 and for bfloat16 (both sides' models in bfloat16),
each timing the median of ``--repeats`` runs, interleaved so that load from other processes falls on
both sides alike:

- the loop;
- the engine with an empty signal cache (cold) and again with it filled (warm: what re-executing a
  chapter pays), both with the reference's window and stride (512/256), so that both sides see the
  same tokens and their scores can be compared;
- the engine cold at its own default window (the model's trained context: the lab's 256, stride 128),
  labelled separately: more windows per long text, so more work, but no position the model never saw.

It also measures, in the same run, the rate of every matmul shape the two models use (``F.linear`` at
256, 1024 and 4096 rows, the best kept) and reports the engine's matmul FLOP rate as a fraction of the
best of them (the peak), and the time its matmuls alone would take, each at its own shape's rate: a
ceiling on any speed-up that keeps these FLOPs (attention and the vocabulary-wide reductions counted as
free). It needs a built lab (``make lab``, or ``MIMIR_CACHE`` pointing at one); it never builds one.

    MIMIR_CACHE=/tmp/fresh/.cache .venv/bin/python scripts/bench_signals.py [--n 300] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np
import torch

from mimirlib.core.attacks import AttackInputs, score
from mimirlib.core.data import load_benchmark
from mimirlib.lab.layout import MAIN_SPLIT, Lab, config_key, expected_models
from mimirlib.core.models import load_model
from mimirlib.paths import cache_root
from mimirlib.profiles import load_profile
from reference_loop import REFERENCE_ATTACKS, reference_loop_scores, reference_spans, reference_window
from mimirlib.core.signals import SignalCache, compute_signals, resolve_window, windows

DTYPES = ("float32", "bfloat16")


class NoLab(Exception):
    """No complete built lab where the cache root says; the message names the folder."""


def find_lab(profile: str) -> Lab:
    """The complete built lab of ``profile`` under the cache root (``MIMIR_CACHE``); never builds one."""
    cfg = load_profile(profile)["lab"]
    root = cache_root() / "lab" / f"{profile}-{config_key(cfg)}"
    lab = Lab(root, cfg)
    missing = [m for m in expected_models(cfg) if not lab.model_dir(m).is_dir()]
    if not (root / "lab.json").is_file() or lab.manifest["config"] != cfg:
        raise NoLab(f"no complete '{profile}' lab at {root} (no manifest for this configuration)")
    if missing:
        raise NoLab(f"the '{profile}' lab at {root} lacks {', '.join(missing)}")
    return lab


def engine_scores(target, ref, texts, window, stride, cache) -> dict[str, np.ndarray]:
    t = compute_signals(target, texts, cache=cache, window=window, stride=stride)
    r = compute_signals(ref, texts, cache=cache, window=window, stride=stride)
    inputs = [AttackInputs(x, a, b) for x, a, b in zip(texts, t, r)]
    return {a: score(a, inputs) for a in REFERENCE_ATTACKS}


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


# Row counts at which each matmul shape is timed: an output-layer chunk of the engine (256 positions),
# a medium pass, and a full pass (4096 tokens); the best of them is the shape's rate.
GEMM_ROWS = (256, 1024, 4096)


def gemm_rate(rows: int, k: int, n: int, bias: bool, dtype: torch.dtype, repeats: int = 5) -> float:
    """GFLOP/s of ``F.linear`` on a [rows x k] input and a [n x k] weight (with a bias if ``bias``), as
    the model's layers call it (median of ``repeats``, after one warm-up)."""
    x = torch.randn(rows, k).to(dtype)
    w = torch.randn(n, k).to(dtype)
    b = torch.randn(n).to(dtype) if bias else None
    with torch.inference_mode():
        torch.nn.functional.linear(x, w, b)
        times = [timed(lambda: torch.nn.functional.linear(x, w, b))[0] for _ in range(repeats)]
    return 2 * rows * k * n / statistics.median(times) / 1e9


def matmul_flops(loaded, ids: list[list[int]], window: int, stride: int) -> dict[tuple[int, int, bool], float]:
    """The FLOPs of the matmuls the engine's windows need, per shape ``(in, out, bias)``: every linear
    layer of the body on every token a window runs (padding excluded), the output layer on every scored
    token. Attention's score/value products are not counted (so any bound made from these is a lower bound
    on time)."""
    model = loaded.model
    head = model.get_output_embeddings()
    run = sum(sp.end - sp.begin for row in ids for sp in windows(len(row), window, stride))
    scored = sum(len(row) - 1 for row in ids)
    flops: dict[tuple[int, int, bool], float] = {}
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            shape = (module.in_features, module.out_features, module.bias is not None)
            tokens = scored if module is head else run
            flops[shape] = flops.get(shape, 0.0) + 2.0 * module.in_features * module.out_features * tokens
    return flops


def matmul_rates(shapes, dtype: torch.dtype) -> dict[tuple[int, int, bool], float]:
    """Each shape's best rate (GFLOP/s) over :data:`GEMM_ROWS`, measured now."""
    return {s: max(gemm_rate(rows, *s, dtype) for rows in GEMM_ROWS) for s in shapes}


def same_context_mask(ids: list[list[int]], window: int, stride: int) -> np.ndarray:
    """Per text: whether the loop's passes and the engine's windows give every token the same context."""

    def begins(spans):
        return [(t, sp.begin) for sp in spans for t in range(sp.first, sp.end)]

    return np.array(
        [begins(reference_spans(len(r), window, stride)) == begins(windows(len(r), window, stride)) for r in ids]
    )


def cpu_name() -> str:
    """The CPU's model name (Linux), else the platform's machine type."""
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="lab", help="the lab profile whose built lab to read (never built here)")
    ap.add_argument("--domains", default="changelog,code", help="comma-separated lab domains")
    ap.add_argument("--n", type=int, default=300, help="texts per domain, half members and half non-members")
    ap.add_argument("--repeats", type=int, default=3, help="runs per timing; the median is reported")
    ap.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated: float32, bfloat16")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's, one per core)")
    args = ap.parse_args()
    dtypes = [d for d in args.dtypes.split(",") if d]
    bad = [d for d in dtypes if d not in DTYPES]
    if bad or not dtypes:
        ap.error(f"--dtypes: unknown {bad or 'none given'}; choose from {', '.join(DTYPES)}")
    if args.n < 2 or args.repeats < 1 or (args.threads is not None and args.threads < 1):
        ap.error("--n must be >= 2, --repeats >= 1 and --threads >= 1")
    try:
        lab = find_lab(args.profile)
    except NoLab as e:
        print(
            f"bench_signals: {e}; build it with `make lab` or set MIMIR_CACHE to a cache that holds one",
            file=sys.stderr,
        )
        return 2
    domains = [d for d in args.domains.split(",") if d]
    unknown = [d for d in domains if d not in lab.config["domains"]]
    if unknown:
        ap.error(f"--domains: {unknown} not in the lab (it has {lab.config['domains']})")
    texts = [t for d in domains for t in load_benchmark(lab.benchmarks_dir, d, MAIN_SPLIT).subset(args.n // 2).texts()]
    target_name, ref_name = lab.target_names()[-1], lab.config["references"][0]["name"]

    started = time.perf_counter()
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    print(
        f"faithful re-implementation of the reference's scoring loop (scripts.reference_loop) vs mimirlib's "
        f"signal engine (compute_signals + attacks.score); machine: {cpu_name()}, "
        f"{os.cpu_count()} CPUs, torch {torch.__version__} with {threads} threads; other processes may share it",
        flush=True,
    )
    results, diffs = {}, {}
    for dtype in dtypes:
        target = load_model(str(lab.model_dir(target_name)), dtype=dtype)
        ref = load_model(str(lab.model_dir(ref_name)), dtype=dtype)
        window, stride = reference_window(target)
        default = resolve_window(target)
        ids = target.tokenizer(texts, add_special_tokens=False)["input_ids"]
        print(
            f"\n{dtype}: {target_name} + {ref_name}, {len(texts)} texts ({', '.join(domains)}), "
            f"{sum(map(len, ids))} tokens; seconds, median of {args.repeats}; speed-up over the loop",
            flush=True,
        )
        reference_loop_scores(target, ref, texts[:2])  # warm-up, not timed
        engine_scores(target, ref, texts[:2], window, stride, None)
        times = {k: [] for k in ("loop", "cold", "warm", "default")}
        for _ in range(args.repeats):
            t, loop = timed(lambda: reference_loop_scores(target, ref, texts))
            times["loop"].append(t)
            with tempfile.TemporaryDirectory() as tmp:
                cache = SignalCache(tmp)
                t, engine = timed(lambda: engine_scores(target, ref, texts, window, stride, cache))
                times["cold"].append(t)
                times["warm"].append(timed(lambda: engine_scores(target, ref, texts, window, stride, cache))[0])
            with tempfile.TemporaryDirectory() as tmp:
                times["default"].append(timed(lambda: engine_scores(target, ref, texts, *default, SignalCache(tmp)))[0])
            print(
                f"  ({dtype} run {len(times['loop'])}: "
                + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items())
                + ")",
                flush=True,
            )
        med = {k: statistics.median(v) for k, v in times.items()}
        flops = {w: [matmul_flops(m, ids, *w) for m in (target, ref)] for w in ((window, stride), default)}
        rates = matmul_rates({s for per_model in flops.values() for f in per_model for s in f}, getattr(torch, dtype))
        peak = max(rates.values())
        results[dtype] = (med, (window, stride), default)
        diffs[dtype] = (loop, engine, same_context_mask(ids, window, stride))

        print(f"  reference loop ({window}/{stride})        : {med['loop']:8.2f} s")
        print(f"  engine cold ({window}/{stride})           : {med['cold']:8.2f} s   {med['loop'] / med['cold']:6.2f}x")
        print(f"  engine warm ({window}/{stride})           : {med['warm']:8.3f} s   {med['loop'] / med['warm']:6.0f}x")
        print(
            f"  engine cold, its default window {default[0]}/{default[1]}: {med['default']:8.2f} s   "
            f"{med['loop'] / med['default']:6.2f}x (more windows per long text; no position the model never trained on)"
        )
        print(
            f"  matmul rates ({dtype}, F.linear, best of {'/'.join(map(str, GEMM_ROWS))} rows; in x out, GFLOP/s): "
            + ", ".join(f"{k}x{n} {r:.0f}" for (k, n, _), r in sorted(rates.items()))
            + f"; peak {peak:.1f}"
        )
        for w, label in (((window, stride), "cold"), (default, "default")):
            gflop = sum(sum(f.values()) for f in flops[w]) / 1e9
            floor = sum(v / 1e9 / rates[s] for f in flops[w] for s, v in f.items())
            achieved = gflop / med[label]
            print(
                f"  engine {label} {w[0]}/{w[1]}: {gflop:.0f} GFLOP of matmuls -> {achieved:6.1f} GFLOP/s = "
                f"{achieved / peak:5.1%} of the peak; those matmuls alone, each at its shape's rate: {floor:.2f} s "
                f"= {floor / med[label]:5.1%} of the engine's time (ceiling {med['loop'] / floor:.1f}x the loop)"
            )
    if "float32" in diffs:
        loop, engine, same = diffs["float32"]
        print(f"\nscores, float32, both sides {results['float32'][1][0]}/{results['float32'][1][1]}:")
        print(
            f"  {same.sum()} texts where both give every token the same context: max |loop - engine| = "
            + ", ".join(f"{a} {np.nanmax(np.abs(loop[a] - engine[a])[same]):.1e}" for a in REFERENCE_ATTACKS)
        )
        if (~same).any():
            print(
                f"  {(~same).sum()} texts whose last, partial step the loop gives less context than the engine's "
                f"full last window: max |loop - engine| = "
                + ", ".join(f"{a} {np.nanmax(np.abs(loop[a] - engine[a])[~same]):.1e}" for a in REFERENCE_ATTACKS)
            )
        if "bfloat16" in diffs:
            _, engine16, _ = diffs["bfloat16"]
            print(
                "  bfloat16 engine vs float32 engine: max |difference| = "
                + ", ".join(f"{a} {np.nanmax(np.abs(engine16[a] - engine[a])):.1e}" for a in REFERENCE_ATTACKS)
            )
    print(f"\nbenchmark wall time {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
