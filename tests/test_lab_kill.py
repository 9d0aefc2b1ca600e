"""kill -9 during lab training (issue 16 item 9): a model's training killed after a checkpoint and
started again resumes from its ``.partial/resume.pt`` and ends with the same model, byte for byte
(weights, every revision, loss curves, data order) as a training never interrupted, so everything the
chapters glue from the lab is the same. One small model (the smoke lab's tokenizer, synthetic token
ids, ~350 steps, one thread) rather than the whole smoke lab, whose models train in under a second
each: too fast to kill reliably mid-way. 26 CPU-seconds (110 s wall on the shared, loaded machine).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TRAIN = """
import sys
import numpy as np
import torch
from mimirlib.lab.train import ModelSize, TrainConfig, train

torch.set_num_threads(1)  # one reduction order: two uninterrupted runs agree bit for bit
rng = np.random.default_rng(0)
docs = [f"doc{i}" for i in range(300)]
tokens = [rng.integers(10, 900, size=300).tolist() for _ in docs]
cfg = TrainConfig(size=ModelSize("h32", 32, 1, 2), seq_len=64, batch_size=4, warmup_steps=5, n_checkpoints=4)
train(cfg, docs, tokens, sys.argv[1], sys.argv[2])
"""
TIMING_KEYS = {"train_seconds", "tokens_per_second"}  # lab_meta.json's wall-clock fields


def start(tokenizer: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", TRAIN, str(tokenizer), str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # the kill takes the whole group, as a kill of `make book`'s would
    )


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_kill_9_during_training_then_a_rerun_gives_the_same_model(tmp_path, smoke_lab):
    tokenizer = smoke_lab.root / "tokenizer"
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"

    run = start(tokenizer, whole)
    assert run.wait(timeout=600) == 0, run.stderr.read().decode()[-2000:]

    killed = start(tokenizer, resumed)
    point = resumed.with_name(resumed.name + ".partial") / "resume.pt"
    t0 = time.monotonic()
    while not point.exists():  # a checkpoint was written: the training is under way
        assert killed.poll() is None, "the training ended before it could be killed"
        assert time.monotonic() - t0 < 300
        time.sleep(0.01)
    time.sleep(0.2)  # past the checkpoint, between two
    assert killed.poll() is None, "the training ended before it could be killed"
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    assert not resumed.exists() and point.exists()  # no half-made model folder, a resume point

    rerun = start(tokenizer, resumed)
    assert rerun.wait(timeout=600) == 0
    assert "resuming" in rerun.stderr.read().decode()  # it continued, not started over
    a, b = files(whole), files(resumed)
    meta_a, meta_b = (json.loads(x.pop("lab_meta.json")) for x in (a, b))
    assert a.keys() == b.keys() and "model.safetensors" in a and any(k.startswith("revisions/") for k in a)
    assert {k for k in a if a[k] != b[k]} == set()  # weights, revisions, curves, data order: byte for byte
    assert {k: v for k, v in meta_a.items() if k not in TIMING_KEYS} == {
        k: v for k, v in meta_b.items() if k not in TIMING_KEYS
    }


ROOT = Path(__file__).resolve().parents[1]
ORPHAN = """
import multiprocessing, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from mimirlib.lab.jobs import die_with_parent

if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(1, mp_context=ctx, initializer=die_with_parent, initargs=(os.getpid(),))
    print(pool.submit(os.getpid).result(), flush=True)
    pool.submit(time.sleep, 120)
    time.sleep(120)
"""


def test_a_killed_build_takes_its_training_workers_with_it(tmp_path):
    """kill -9 of the build (as a killed `make book` leaves it): its pool's worker does not train on."""
    script = tmp_path / "orphan.py"
    script.write_text(ORPHAN)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    worker = int(proc.stdout.readline())
    os.kill(worker, 0)  # alive while its build is
    proc.kill()
    proc.wait()
    for _ in range(100):
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(worker, signal.SIGKILL)
    pytest.fail("the training worker outlived the build that started it")
