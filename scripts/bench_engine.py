"""Benchmark: compute_signals on the local engine vs the Ray engine with 1 and 2 workers, same texts.

The model is the lab profile's largest target *shape* (GPT-NeoX, its hidden size, layers, heads,
vocabulary and context) with random weights, saved to a temporary folder: a forward pass costs the
same whatever the weights, and nothing has to be trained. The texts are the built smoke lab's
training pool, tokenized by its tokenizer (it is never built here). Each configuration scores all
texts with no cache, ``--repeats`` times; the median is reported as tokens per second and as a ratio
to the local engine. The Ray figures exclude starting the cluster and the workers (printed apart):
they are paid once per process, not per call. On a 2-core machine two 1-CPU workers can at best
match the local engine's 2 threads; the engine exists for machines with many GPUs or nodes.

    .venv/bin/python scripts/bench_engine.py [--n 96] [--repeats 3] [--workers 1,2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from mimirlib.core import engines, ray_cluster
from mimirlib.lab.layout import Lab, config_key
from mimirlib.lab.train import ModelSize, neox_config
from mimirlib.core.models import load_model
from mimirlib.paths import cache_root
from mimirlib.profiles import load_profile
from mimirlib.core.signals import compute_signals


def find_lab(profile: str) -> Lab | None:
    cfg = load_profile(profile)["lab"]
    lab = Lab(cache_root() / "lab" / f"{profile}-{config_key(cfg)}", cfg)
    return lab if (lab.root / "lab.json").is_file() and (lab.root / "tokenizer").is_dir() else None


def make_model(folder: Path, tokenizer_dir: Path, shape_profile: str) -> tuple[str, int]:
    """A random-weight GPT-NeoX of ``shape_profile``'s largest target shape, saved in ``folder``."""
    from transformers import AutoTokenizer, GPTNeoXForCausalLM

    cfg = load_profile(shape_profile)["lab"]
    size = ModelSize(**cfg["targets"][-1])
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    vocab = max(int(cfg["tokenizer"]["vocab_size"]), len(tok))
    torch.manual_seed(0)
    model = GPTNeoXForCausalLM(neox_config(size, vocab, int(cfg["seq_len"]), tok.eos_token_id))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    n_params = sum(p.numel() for p in model.parameters())
    return f"{size.name} shape ({size.hidden} hidden, {size.layers} layers, vocabulary {vocab})", n_params


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def max_diff(a, b) -> float:
    return max(
        float(np.abs(getattr(x, f) - getattr(y, f)).max()) for x, y in zip(a, b) for f in ("logprob", "mean", "var")
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="smoke", help="built lab whose texts and tokenizer are read (never built)")
    ap.add_argument("--shape", default="lab", help="profile whose largest target shape the model takes")
    ap.add_argument("--n", type=int, default=96, help="texts scored per run")
    ap.add_argument("--batch-size", type=int, default=16, help="texts per batch (windows per forward pass)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per configuration; the median is reported")
    ap.add_argument("--workers", default="1,2", help="comma-separated Ray worker counts (1 CPU each)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads of the local engine (default: torch's)")
    args = ap.parse_args()
    try:
        workers = [int(w) for w in args.workers.split(",") if w]
    except ValueError:
        ap.error(f"--workers: expected comma-separated integers, got {args.workers!r}")
    if args.n < 1 or args.repeats < 1 or args.batch_size < 1 or not workers or min(workers) < 1:
        ap.error("--n, --batch-size, --repeats and every --workers count must be >= 1")
    if args.threads is not None:
        if args.threads < 1:
            ap.error("--threads must be >= 1")
        torch.set_num_threads(args.threads)
    lab = find_lab(args.profile)
    if lab is None:
        print(
            f"bench_engine: no built '{args.profile}' lab under {cache_root()}; "
            f"build it with `make lab PROFILE={args.profile}`",
            file=sys.stderr,
        )
        return 2
    ray_cluster.import_ray()
    texts = lab.pool_texts("train")[: args.n]
    cpus = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        shape, n_params = make_model(Path(tmp) / "model", lab.root / "tokenizer", args.shape)
        loaded = load_model(str(Path(tmp) / "model"), dtype="float32")
        n_tokens = sum(map(len, loaded.tokenizer(texts, add_special_tokens=False)["input_ids"]))
        print(
            f"compute_signals, local engine vs Ray engine; model: random-weight GPT-NeoX, {shape}, "
            f"{n_params / 1e6:.1f}M parameters, float32, window {loaded.context_length}; {len(texts)} texts "
            f"({n_tokens} tokens) of the '{args.profile}' lab, batch size {args.batch_size}, no cache; "
            f"machine: {cpus} CPUs, torch {torch.__version__} with {torch.get_num_threads()} threads in the "
            f"local engine; median of {args.repeats}; other processes may share the machine",
            flush=True,
        )

        def run(engine="local"):
            return compute_signals(loaded, texts, batch_size=args.batch_size, engine=engine)

        compute_signals(loaded, texts[:2], engine="local")  # warm-up, not timed
        rows = []
        times = [timed(run)[0] for _ in range(args.repeats)]
        local_sigs = run()
        rows.append(("local", f"{torch.get_num_threads()} threads", statistics.median(times), 0.0))
        print(f"  local: {', '.join(f'{t:.2f}' for t in times)} s", flush=True)
        for n in workers:
            engine = engines.RayEngine(workers=n, num_cpus=max(cpus, n))
            t_cluster, _ = timed(lambda: ray_cluster.connect(engine))
            t_pool, _ = timed(lambda: engines.pool_for(engine))
            run(engine)  # every worker loads the model once (not timed: paid once per process)
            times = [timed(lambda: run(engine))[0] for _ in range(args.repeats)]
            diff = max_diff(run(engine), local_sigs)
            start = f"cluster {t_cluster:.1f} s" if t_cluster > 0.05 else "cluster up"
            rows.append(
                (
                    f"ray, {n} worker{'s' if n > 1 else ''}",
                    f"1 CPU each; {start}, workers {t_pool:.1f} s",
                    statistics.median(times),
                    diff,
                )
            )
            print(f"  ray {n}: {', '.join(f'{t:.2f}' for t in times)} s", flush=True)
        engines.shutdown()
    base = rows[0][2]
    print(f"\n{'engine':<16} {'tokens/s':>10} {'texts/s':>8} {'vs local':>9} {'max |diff|':>11}  notes")
    for name, note, t, diff in rows:
        print(
            f"{name:<16} {n_tokens / t:>10,.0f} {len(texts) / t:>8.1f} {base / t:>8.2f}x {diff:>11.1e}  {note}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
