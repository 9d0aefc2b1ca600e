"""Training tiny GPT-NeoX (Pythia-architecture) models on CPU, with a recorded data order.

Read it in one sitting, nanoGPT-style: documents are shuffled by a seeded permutation per
epoch, joined with EOS into one token stream (Pythia packs the same way), cut into
``seq_len`` windows, and fed ``batch_size`` windows per step. Because the order is a pure
function of the seed, we can say exactly at which steps each document was seen, which is
the ground truth the training-size and epochs chapters need. Checkpoints are saved with
``save_pretrained`` under ``revisions/step<N>`` so they load like Pythia's ``revision="step<N>"``.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from mimirlib.progress import log, progress


@dataclass(frozen=True)
class ModelSize:
    """GPT-NeoX shape; ``name`` is how the book refers to it (h64, h128, ...)."""

    name: str
    hidden: int
    layers: int
    heads: int


@dataclass(frozen=True)
class TrainConfig:
    size: ModelSize
    seq_len: int = 256
    batch_size: int = 16
    lr: float = 1e-3
    warmup_steps: int = 20
    weight_decay: float = 0.1
    epochs: int = 1
    seed: int = 0
    n_checkpoints: int = 8  # besides the final one; log-spaced early, then regular
    eval_every_checkpoint: bool = True
    bf16_autocast: bool = False  # bfloat16 matmuls in the training forward pass: ~1.9x faster at h256 on AVX-512 CPUs
    # Share of the cosine schedule's horizon that the run trains for: 1.0 decays to 10% of the peak
    # learning rate at the last step; 0.692 stops where Pythia's step 99,000 of 143,000 sits (~30%).
    schedule_fraction: float = 1.0


def neox_config(size: ModelSize, vocab_size: int, seq_len: int, eos_id: int):
    from transformers import GPTNeoXConfig

    return GPTNeoXConfig(
        vocab_size=vocab_size,
        hidden_size=size.hidden,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        intermediate_size=4 * size.hidden,
        max_position_embeddings=max(seq_len, 512),
        rotary_pct=0.25,
        use_parallel_residual=True,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        tie_word_embeddings=False,
    )


def checkpoint_steps(total: int, n: int) -> list[int]:
    """Pythia-like schedule: log-spaced early (1, 2, 4, ...), then evenly spaced, ending at ``total``."""
    early = [2**i for i in range(int(math.log2(max(total, 1))) + 1) if 2**i < total // 4]
    regular = np.linspace(total / max(n - len(early[: n // 2]), 1), total, max(n - len(early[: n // 2]), 1))
    steps = sorted(set(early[: n // 2]) | {int(round(s)) for s in regular} | {total})
    return [s for s in steps if 1 <= s <= total]


@dataclass
class DataOrder:
    """Which document was seen at which step: ``spans[doc] = [(first_step, last_step), ...]``, one per occurrence."""

    steps: int
    tokens_per_step: int
    spans: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def seen_by(self, doc_id: str, step: int) -> int:
        """How many times ``doc_id`` had been fully trained on after ``step`` steps."""
        return sum(1 for _, last in self.spans.get(doc_id, []) if last < step)

    def seen_in_window(self, first: int, last: int) -> list[str]:
        """Documents seen exactly once, entirely within steps ``first..last`` (the paper samples
        training-size members "from the most recent 100 steps" before a checkpoint)."""
        return sorted(
            d for d, spans in self.spans.items() if len(spans) == 1 and first <= spans[0][0] and spans[0][1] <= last
        )

    def to_json(self) -> dict:
        return {"steps": self.steps, "tokens_per_step": self.tokens_per_step, "spans": self.spans}

    @classmethod
    def from_json(cls, d: dict) -> "DataOrder":
        return cls(d["steps"], d["tokens_per_step"], {k: [tuple(x) for x in v] for k, v in d["spans"].items()})


def pack(
    doc_ids: list[str], token_lists: list[list[int]], eos_id: int, cfg: TrainConfig
) -> tuple[np.ndarray, DataOrder]:
    """Shuffle per epoch (seeded), join with EOS, cut into windows; record each document's steps."""
    rng = np.random.default_rng(cfg.seed)
    stream: list[int] = []
    starts: list[tuple[str, int, int]] = []
    for _ in range(cfg.epochs):
        for i in rng.permutation(len(doc_ids)):
            begin = len(stream)
            stream.extend(token_lists[i])
            stream.append(eos_id)
            starts.append((doc_ids[i], begin, len(stream)))
    per_step = cfg.seq_len * cfg.batch_size
    n_windows = len(stream) // cfg.seq_len
    steps = n_windows // cfg.batch_size
    if steps < 1:
        raise ValueError(f"training data has {len(stream)} tokens, fewer than one step ({per_step})")
    windows = np.asarray(stream[: steps * per_step], dtype=np.int64).reshape(steps * cfg.batch_size, cfg.seq_len)
    order = DataOrder(steps=steps, tokens_per_step=per_step)
    for doc, b, e in starts:
        if b >= steps * per_step:
            continue  # the tail that did not fill a step is never trained on: not a member
        last = min(e - 1, steps * per_step - 1)
        order.spans.setdefault(doc, []).append((b // per_step + 1, last // per_step + 1))  # 1-based steps
    return windows, order


def mean_loss(model, windows: np.ndarray, batch_size: int = 32) -> float:
    """Mean token NLL of ``model`` on fixed windows (train/held-out curves)."""
    model.eval()
    total, count = 0.0, 0
    with torch.inference_mode():
        for i in range(0, len(windows), batch_size):
            x = torch.from_numpy(windows[i : i + batch_size])
            out = model(input_ids=x, labels=x)
            n = x.numel() - x.shape[0]
            total += float(out.loss) * n
            count += n
    model.train()
    return total / max(count, 1)


# Tokens per chunk of the fused output layer + loss: 128 x 8,000 logits (2 MB in bfloat16) stay in cache
# (measured on h64: 64 -> 319, 128 -> 279, 256 -> 312, 512 -> 407 ms per training step, 1 thread).
LOSS_CHUNK = 128


class FusedOutputCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of ``h @ W.T`` against ``y``, computed chunk by chunk, gradients included.

    The unfused path (``model(input_ids=x, labels=x).loss``) materialises a batch x sequence x
    vocabulary logit tensor (16 x 256 x 8,000 = 131 MB in float32), copies it to float32, and runs
    log-softmax, its backward and a zero-filled gradient over it: with the lab's 8k vocabulary that is
    over half of a small model's training step. Here each chunk of ``LOSS_CHUNK`` positions computes
    its logits, its loss and, since the loss is the graph's last node, its gradients (softmax minus
    one-hot, times ``h`` and ``W``) while the logits are still in cache; backward only scales them.
    Same mathematics as the unfused loss (float32: equal to 1e-6, tests/test_lab.py); matmuls
    run in ``dtype`` (bfloat16 under the lab's autocast, as the unfused path's do), and so does the
    softmax's output (float32 arithmetic inside one fused kernel): no float32 copy of the logits and
    one exponential per logit, which took the bfloat16 loss's forward and backward from 170 to 102 ms
    (h32) and 312 to 224 ms (h128) per 4,080 positions on 1 thread; its gradients stay as close to
    float32 as the unfused bfloat16 path's (relative error 0.0115 vs 0.0100 in the test's model).
    Measured per training step of ``scripts/bench_training.py``'s 2-layer models, 1 thread, unfused ->
    fused (2026-12-01, after the one-kernel softmax; this machine's run-to-run spread is about 20%):
    h32 518 -> 207 ms, h64 579 -> 280, h128 747 -> 385, h256 1,079 -> 795.
    """

    @staticmethod
    def forward(ctx, h, weight, y, dtype):
        n = h.shape[0]
        hd, wd = h.to(dtype), weight.to(dtype)
        grad_h = torch.empty(h.shape, dtype=torch.float32)
        grad_w = torch.zeros(weight.shape, dtype=torch.float32)
        total = torch.zeros((), dtype=torch.float32)
        for i in range(0, n, LOSS_CHUNK):
            hc, yc = hd[i : i + LOSS_CHUNK], y[i : i + LOSS_CHUNK]
            logits = hc @ wd.t()
            # softmax in one fused pass (float32 inside, written in ``dtype``: no float32 copy of the logits);
            # log-sum-exp = max + log(sum exp(logits - max)), where the largest softmax entry is exp(0) / sum
            g = torch.softmax(logits, dim=1)
            lse = logits.amax(1).float() - g.amax(1).float().log()
            total += (lse - logits.gather(1, yc[:, None]).squeeze(1).float()).sum()
            g[torch.arange(len(yc)), yc] -= 1.0
            grad_h[i : i + LOSS_CHUNK] = g @ wd
            grad_w += g.t() @ hc
        ctx.save_for_backward(grad_h.div_(n).to(h.dtype), grad_w.div_(n).to(weight.dtype))
        return total / n

    @staticmethod
    def backward(ctx, grad_out):
        grad_h, grad_w = ctx.saved_tensors
        return grad_h * grad_out, grad_w * grad_out, None, None


def causal_lm_loss(model, x: torch.Tensor, *, bf16: bool = False) -> torch.Tensor:
    """The mean next-token loss of a GPT-NeoX model on windows ``x`` (what ``model(input_ids=x,
    labels=x).loss`` returns), with the output layer fused into the loss (:class:`FusedOutputCrossEntropy`)."""
    h = model.gpt_neox(input_ids=x).last_hidden_state[:, :-1]
    h = h.reshape(-1, h.shape[-1])
    y = x[:, 1:].reshape(-1)
    return FusedOutputCrossEntropy.apply(
        h, model.get_output_embeddings().weight, y, torch.bfloat16 if bf16 else torch.float32
    )


def learning_rate(cfg: TrainConfig, step: int, total: int) -> float:
    """Linear warm-up, then cosine decay to 10% of the peak over ``total / schedule_fraction`` steps
    (Pythia's shape); with ``schedule_fraction`` < 1 the run stops before the decay ends."""
    horizon = total / cfg.schedule_fraction
    warm = min(1.0, step / max(cfg.warmup_steps, 1))
    return cfg.lr * warm * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(step / horizon, 1.0))))


RESUME_FILE = "resume.pt"  # in the ``.partial`` work folder: where an interrupted training resumes


def save_resume(path: Path, model, opt, step: int, curves: list[dict]) -> None:
    """The resume point after ``step``: weights, optimizer state, the step and the loss curves so
    far. Only tensors and plain values (dicts, lists, numbers, strings, None), so that
    :func:`load_resume` can read it without unpickling arbitrary objects."""
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "curves": curves}, path)


def load_resume(path: Path) -> dict | None:
    """The resume point at ``path``, read with ``torch.load(weights_only=True)`` (tensors and plain
    values only: a pickle that would construct any other object, or run code, is refused, never
    executed); None when there is none. A file that cannot be read that way (corrupt, or written by
    something else) is removed with a log line and training starts afresh: the run is deterministic,
    so a fresh start ends with the same model a resumed one would."""
    if not path.exists():
        return None
    try:
        state = torch.load(path, weights_only=True)
        if not (isinstance(state, dict) and {"model", "opt", "step", "curves"} <= state.keys()):
            raise ValueError("not a resume point (keys model, opt, step, curves)")
    except (pickle.UnpicklingError, RuntimeError, ValueError, EOFError) as exc:
        why = str(exc).strip().split("\n", 1)[0][:200]
        log(f"{path}: unreadable resume point ({type(exc).__name__}: {why}); training afresh")
        path.unlink()
        return None
    return state


def train(
    cfg: TrainConfig,
    doc_ids: list[str],
    token_lists: list[list[int]],
    tokenizer_dir: str | Path,
    out_dir: str | Path,
    *,
    eval_windows: dict[str, np.ndarray] | None = None,
) -> Path:
    """Train one model and save it (with checkpoints, data order and loss curves) to ``out_dir``.

    Work happens in ``<out_dir>.partial``; a ``resume.pt`` written at every checkpoint lets an
    interrupted run continue; the finished folder appears atomically at ``out_dir``.
    """
    from transformers import AutoTokenizer, GPTNeoXForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # one bar per training run is enough; not one per checkpoint save
    out_dir = Path(out_dir)
    work = out_dir.with_name(out_dir.name + ".partial")
    work.mkdir(parents=True, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    eos = tok.eos_token_id
    windows, order = pack(doc_ids, token_lists, eos, cfg)
    torch.manual_seed(cfg.seed)
    model = GPTNeoXForCausalLM(neox_config(cfg.size, len(tok), cfg.seq_len, eos))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=cfg.weight_decay)
    total = order.steps
    ckpts = checkpoint_steps(total, cfg.n_checkpoints)
    curves: list[dict] = []
    start = 1
    resume = work / RESUME_FILE
    state = load_resume(resume)
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start, curves = state["step"] + 1, state["curves"]
        log(f"resuming {out_dir.name} at step {start}/{total}")
    model.train()
    t0 = time.perf_counter()
    for step in progress(range(start, total + 1), total=total, initial=start - 1, desc=f"train {out_dir.name}"):
        for g in opt.param_groups:
            g["lr"] = learning_rate(cfg, step, total)
        x = torch.from_numpy(windows[(step - 1) * cfg.batch_size : step * cfg.batch_size])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cfg.bf16_autocast):
            loss = causal_lm_loss(model, x, bf16=cfg.bf16_autocast)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step in ckpts:
            rec = {"step": step, "tokens": step * order.tokens_per_step, "train_loss_batch": loss.item()}
            for name, w in (eval_windows or {}).items():
                rec[f"{name}_loss"] = mean_loss(model, w)
            curves.append(rec)
            model.save_pretrained(work / "revisions" / f"step{step}")
            tok.save_pretrained(work / "revisions" / f"step{step}")
            if step < total:
                save_resume(resume, model, opt, step, curves)
    elapsed = time.perf_counter() - t0
    model.save_pretrained(work)
    tok.save_pretrained(work)
    meta = {
        "config": asdict(cfg),
        "params": sum(p.numel() for p in model.parameters()),
        "steps": total,
        "tokens_seen": total * order.tokens_per_step,
        "checkpoints": ckpts,
        "train_seconds": round(elapsed, 1),
        "tokens_per_second": round((total - start + 1) * order.tokens_per_step / max(elapsed, 1e-9)),
    }
    return publish_run(work, out_dir, meta, curves, order)


def publish_run(work: Path, out_dir: Path, meta: dict, curves: list[dict], order: DataOrder) -> Path:
    """Write the run's record (``lab_meta.json``, ``curves.json``, ``data_order.json``) into the
    work folder, drop its resume point and move it to ``out_dir`` in one rename."""
    (work / "lab_meta.json").write_text(json.dumps(meta, indent=1))
    (work / "curves.json").write_text(json.dumps(curves, indent=1))
    (work / "data_order.json").write_text(json.dumps(order.to_json()))
    resume = work / RESUME_FILE
    if resume.exists():
        resume.unlink()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    os.replace(work, out_dir)
    return out_dir
