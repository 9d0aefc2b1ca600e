"""Benchmark: the batched signal engine versus the reference implementation's per-sample loop.

Both compute the same loss-based attacks (LOSS, zlib, Min-K%, Min-K%++, reference) on the
same lab model and texts, in one run. The engine makes one batched forward pass per text and
model, then derives every attack from the signals; the baseline re-runs the model once per
(text, attack), batch size 1, as github.com/iamgroot42/mimir does. Prints seconds and speed-up,
and checks that both give the same scores.

    .venv/bin/python scripts/bench_signals.py [--profile lab] [--domain code] [--n 100]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import zlib

import numpy as np
import torch

from mimirlib.attacks import AttackInputs, score
from mimirlib.data import load_benchmark
from mimirlib.lab.build import ensure_lab
from mimirlib.lab.layout import MAIN_SPLIT
from mimirlib.models import load_model
from mimirlib.signals import SignalCache, compute_signals

ATTACKS = ["loss", "zlib", "min_k", "min_k_pp", "ref"]


def per_sample(model, ref, texts, max_length):
    """One forward pass per (text, attack); reference runs both models for its attack."""
    out = {a: [] for a in ATTACKS}

    def token_stats(m, text):
        ids = m.tokenizer(
            text, return_tensors="pt", truncation=True, max_length=max_length, add_special_tokens=False
        ).input_ids
        with torch.inference_mode():
            logits = m.model(input_ids=ids).logits[0, :-1].float()
        logp = torch.log_softmax(logits, -1)
        tok = logp.gather(-1, ids[0, 1:, None]).squeeze(-1)
        return logp, tok

    for text in texts:
        for a in ATTACKS:
            logp, tok = token_stats(model, text)
            if a == "loss":
                out[a].append(float(tok.mean()))
            elif a == "zlib":
                out[a].append(float(tok.mean()) / len(zlib.compress(text.encode())))
            elif a == "min_k":
                n = max(1, int(0.2 * len(tok)))
                out[a].append(float(torch.sort(tok).values[:n].mean()))
            elif a == "min_k_pp":
                p = logp.exp()
                mu = (p * logp).sum(-1)
                sigma = ((p * logp.square()).sum(-1) - mu.square()).clamp_min(1e-12).sqrt()
                z = (tok - mu) / sigma
                n = max(1, int(0.2 * len(z)))
                out[a].append(float(torch.sort(z).values[:n].mean()))
            elif a == "ref":
                _, rtok = token_stats(ref, text)
                out[a].append(float(tok.mean() - rtok.mean()))
    return {a: np.array(v) for a, v in out.items()}


def batched(model, ref, texts, max_length, batch_size, cache=None):
    t = compute_signals(model, texts, window=max_length, stride=max_length // 2, batch_size=batch_size, cache=cache)
    r = compute_signals(ref, texts, window=max_length, stride=max_length // 2, batch_size=batch_size, cache=cache)
    inputs = [AttackInputs(x, s, q) for x, s, q in zip(texts, t, r)]
    return {a: score(a, inputs) for a in ATTACKS}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="lab")
    ap.add_argument("--domain", default=None)
    ap.add_argument("--model", default=None, help="lab model name (default: the largest target)")
    ap.add_argument("--n", type=int, default=100, help="members and as many non-members")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-length", type=int, default=512)
    args = ap.parse_args()
    torch.set_num_threads(torch.get_num_threads())
    lab = ensure_lab(args.profile)
    domain = args.domain or lab.config["domains"][0]
    texts = load_benchmark(lab.benchmarks_dir, domain, MAIN_SPLIT).subset(args.n).texts()
    name = args.model or lab.target_names()[-1]
    model = load_model(str(lab.model_dir(name)))
    ref = load_model(str(lab.model_dir(lab.config["references"][0]["name"])))
    per_sample(model, ref, texts[:2], args.max_length)  # warm-up, not timed
    t0 = time.perf_counter()
    a = batched(model, ref, texts, args.max_length, args.batch_size)
    t_batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    b = per_sample(model, ref, texts, args.max_length)
    t_loop = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:  # a re-execution: signals already on disk
        cache = SignalCache(tmp)
        batched(model, ref, texts, args.max_length, args.batch_size, cache)
        t0 = time.perf_counter()
        batched(model, ref, texts, args.max_length, args.batch_size, cache)
        t_cached = time.perf_counter() - t0
    worst = max(float(np.max(np.abs(a[k] - b[k]))) for k in ATTACKS)
    print(f"model {name}, domain {domain}, {len(texts)} texts, attacks {ATTACKS}, threads {torch.get_num_threads()}")
    print(f"batched signal engine : {t_batched:8.2f} s")
    print(f"per-sample, per-attack: {t_loop:8.2f} s")
    print(f"speed-up              : {t_loop / t_batched:8.1f}x")
    print(f"re-run, signals cached: {t_cached:8.2f} s ({t_loop / t_cached:.0f}x; what a notebook re-execution pays)")
    print(f"max |score difference|: {worst:.2e}")


if __name__ == "__main__":
    main()
