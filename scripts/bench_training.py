"""Benchmark: the fused output loss, and one lab model with 2 threads vs two side by side with 1 thread each.

First: ms per training step with the lab's fused output layer + loss (mimirlib.lab.train.causal_lm_loss)
against transformers' unfused loss, one thread. Then:

What `MIMIR_LAB_JOBS` (mimirlib.lab.jobs.train_models) bets on: the lab's tiny models cannot keep two
cores busy, so two 1-thread runs at once beat one 2-thread run after another. Prints ms per training
step and models-steps per second for each setting, on random tokens with the lab's shapes (vocabulary
8,000, 16 windows of 256 tokens, bf16 autocast). Run it alone: another process on the cores distorts it.

    .venv/bin/python scripts/bench_training.py [--hidden 32 64] [--steps 20]
"""

from __future__ import annotations

import argparse
import multiprocessing
import time


def ms_per_step(hidden: int, threads: int, steps: int, fused: bool = True) -> float:
    """ms per training step; ``fused``: the lab's loss (mimirlib.lab.train.causal_lm_loss), else
    transformers' own ``model(input_ids=x, labels=x).loss`` (full logits tensor)."""
    import torch
    from transformers import GPTNeoXForCausalLM

    from mimirlib.lab.train import ModelSize, causal_lm_loss, neox_config

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPTNeoXForCausalLM(neox_config(ModelSize("b", hidden, 2, 2), 8000, 256, 0))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 8000, (16, 256))
    for i in range(steps + 3):
        if i == 3:  # three warm-up steps
            t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = causal_lm_loss(model, x, bf16=True) if fused else model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    return (time.perf_counter() - t0) / steps * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hidden", type=int, nargs="+", default=[32, 64])
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    ctx = multiprocessing.get_context("spawn")
    print(f"cores: {multiprocessing.cpu_count()}; {args.steps} timed steps per run")
    for h in args.hidden:  # the fused output layer + loss against transformers' unfused loss, 1 thread
        with ctx.Pool(1) as pool:
            unfused = pool.apply(ms_per_step, (h, 1, args.steps, False))
            fused = pool.apply(ms_per_step, (h, 1, args.steps, True))
        print(
            f"h{h}, 1 thread: unfused loss {unfused:6.0f} ms/step | fused {fused:6.0f} ms/step | {unfused / fused:.2f}x"
        )
    for h in args.hidden:
        with ctx.Pool(1) as pool:
            two = pool.apply(ms_per_step, (h, 2, args.steps))
        with ctx.Pool(2) as pool:
            side = pool.starmap(ms_per_step, [(h, 1, args.steps)] * 2)
        rate_serial, rate_side = 1000 / two, sum(1000 / s for s in side)
        print(
            f"h{h}: one model, 2 threads {two:6.0f} ms/step ({rate_serial:.2f} steps/s) | two models side by side, "
            f"1 thread each {side[0]:6.0f} / {side[1]:6.0f} ms/step ({rate_side:.2f} steps/s) | "
            f"side by side / one after another: {rate_side / rate_serial:.2f}x"
        )


if __name__ == "__main__":
    main()
