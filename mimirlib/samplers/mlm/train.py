"""Training the lab's small BERT-style masked LM: the stand-in for BERT, which cannot be
downloaded in the embedded lab (the neighbourhood attack's and the range samplers' masker).

Tokenizer: cased WordPiece (BERT's normaliser without lowercasing or accent stripping,
BERT's whitespace+punctuation pre-tokenizer), rather than byte-level BPE, because
neighbours are spliced into the original string at token offsets: WordPiece tokens
never contain whitespace and are whole characters, so a swap replaces one word piece
and leaves every space, newline and indent in place, while byte-level BPE tokens carry
whitespace ("Ġthe", "ĊĠĠĠ") and can be partial UTF-8 bytes that decode to U+FFFD.
It is also BERT's own scheme, so the lab and `bert-base-uncased` share one code path.
The vocabulary is learnt by `mimirlib.samplers.mlm.wordpiece.learn_wordpiece_vocab` (the same
BPE-merge procedure as the `tokenizers` WordPiece trainer, which differs from run to run);
the normaliser, pre-tokenizer, model and decoder are the `tokenizers` library's own.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from mimirlib.fsutil import staged_dir
from mimirlib.core.models import right_pad
from mimirlib.progress import progress_factory
from mimirlib.samplers.mlm.inputs import as_text_list, check_texts
from mimirlib.samplers.mlm.wordpiece import SPECIAL_TOKENS, train_wordpiece

__all__ = ["TRAINING_INFO", "train_masked_lm"]

#: The file in a trained masked LM's folder that records how it was trained.
TRAINING_INFO = "mlm_training.json"


@contextlib.contextmanager
def _deterministic_torch(seed: int):
    """Seed torch and turn on deterministic kernels, restoring the caller's state after.

    fork_rng keeps the caller's global RNG stream untouched; warn_only because on CPU the
    kernels used here are deterministic anyway and an error would only break callers.
    """
    prev = torch.are_deterministic_algorithms_enabled()
    prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.use_deterministic_algorithms(True, warn_only=True)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(prev, warn_only=prev_warn)


def _windows(tok, texts: Sequence[str], max_len: int) -> list[list[int]]:
    """Each text as consecutive windows of max_len tokens ([CLS] ... [SEP]): nothing is cut off."""
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    body = max_len - 2
    out = []
    for enc in tok.encode_batch(list(texts), add_special_tokens=False):
        ids = enc.ids
        for start in range(0, len(ids), body):
            out.append([cls_id, *ids[start : start + body], sep_id])
    return out


def _mask_batch(input_ids, attention_mask, *, mask_id, n_special, vocab, generator):
    """BERT's 15% masking (80% [MASK], 10% random, 10% kept), >= 1 target per row."""
    real = attention_mask.bool() & (input_ids >= n_special)
    chosen = (torch.rand(input_ids.shape, generator=generator) < 0.15) & real
    # a row with no target contributes nothing; give it one so every window teaches something
    empty = ~chosen.any(dim=1) & real.any(dim=1)
    if empty.any():
        scores = torch.rand(input_ids.shape, generator=generator).masked_fill(~real, -1.0)
        first = scores.argmax(dim=1)
        rows = empty.nonzero().squeeze(1)
        chosen[rows, first[rows]] = True
    labels = input_ids.masked_fill(~chosen, -100)
    inputs = input_ids.clone()
    draw = torch.rand(input_ids.shape, generator=generator)
    inputs[chosen & (draw < 0.8)] = mask_id
    randomise = chosen & (draw >= 0.8) & (draw < 0.9)
    inputs[randomise] = torch.randint(n_special, vocab, input_ids.shape, generator=generator)[randomise]
    return inputs, labels


def _check_arguments(texts: list[str], out_dir: Path, *, lr: float, **sizes: int) -> None:
    """Every argument of :func:`train_masked_lm` checked before any work, naming the culprit."""
    check_texts(texts)
    if not any(t.strip() for t in texts):
        raise ValueError("texts holds no non-blank text to train the masked LM on")
    lows = dict(vocab_size=len(SPECIAL_TOKENS) + 1, hidden=1, layers=1, heads=1, max_len=8, epochs=1, batch_size=1)
    for name, low in lows.items():
        value = sizes[name]
        if not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if sizes["hidden"] % sizes["heads"]:
        raise ValueError(f"hidden ({sizes['hidden']}) must be divisible by heads ({sizes['heads']})")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    if out_dir.exists() and not out_dir.is_dir():
        raise FileExistsError(f"out_dir {str(out_dir)!r} exists and is not a folder")


def _train_epochs(model, windows, tokenizer, *, epochs: int, batch_size: int, lr: float, seed: int, bar) -> list[float]:
    """AdamW with 10% linear warm-up and linear decay, BERT masking, clipping at 1.0; the mean
    loss of each epoch. Data order and masking are drawn from one generator seeded with ``seed``."""
    vocab = len(tokenizer)
    total = epochs * math.ceil(len(windows) / batch_size)
    warmup = max(1, total // 10)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup)))
    )
    gen = torch.Generator().manual_seed(seed)
    pad_id, mask_id = tokenizer.pad_token_id, tokenizer.mask_token_id
    epoch_losses = []
    for _ in range(epochs):
        order = torch.randperm(len(windows), generator=gen).tolist()
        losses = []
        for b in range(0, len(order), batch_size):
            rows = [windows[j] for j in order[b : b + batch_size]]
            ids, att = right_pad(rows, pad_id)
            inputs, labels = _mask_batch(
                ids, att, mask_id=mask_id, n_special=len(SPECIAL_TOKENS), vocab=vocab, generator=gen
            )
            # the MLM head only at the ~15% target positions: same loss as
            # model(labels=...), ~1.7x faster on CPU than logits for every position
            hidden_states = model.bert(input_ids=inputs, attention_mask=att).last_hidden_state
            target = labels != -100
            loss = torch.nn.functional.cross_entropy(model.cls(hidden_states[target]), labels[target])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(loss.item())
            bar.update(1)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{losses[-1]:.3f}")
        epoch_losses.append(float(np.mean(losses)))
    return epoch_losses


def _save(out_dir: Path, model, tokenizer, info: dict) -> None:
    """Model, tokenizer and training record into ``out_dir``, staged: a crash leaves no half-written model."""
    with staged_dir(out_dir) as tmp:
        model.save_pretrained(tmp)  # safetensors is the only format transformers 5 writes
        tokenizer.save_pretrained(tmp)
        (tmp / TRAINING_INFO).write_text(json.dumps(info, indent=2) + "\n")
        if not (tmp / "model.safetensors").is_file():
            raise RuntimeError(f"save_pretrained wrote no model.safetensors in {tmp}")


def train_masked_lm(
    texts: list[str],
    out_dir,
    *,
    vocab_size: int = 8000,
    hidden: int = 128,
    layers: int = 2,
    heads: int = 2,
    max_len: int = 256,
    epochs: int = 1,
    batch_size: int = 32,
    lr: float = 5e-4,
    seed: int = 0,
    progress=None,
) -> Path:
    """Train a small BERT-style masked LM on `texts` and save it to `out_dir`; returns the path.

    Stands in for BERT (the paper's masker), which cannot be downloaded offline. The folder
    holds config.json, model.safetensors, tokenizer.json/tokenizer_config.json and
    mlm_training.json, so `load_masked_lm(out_dir)` uses the same `from_pretrained` path as
    a hub name. It is written to a temporary sibling first and moved into place with
    `os.replace`: a crash never leaves a half-written model.

    Tokenizer: cased WordPiece (why: the module docstring).

    Texts longer than max_len tokens are split into consecutive windows (nothing is
    dropped). Standard BERT masking (15%: 80/10/10), AdamW with 10% linear warm-up and
    linear decay, gradient clipping at 1.0. Deterministic under `seed` on one machine:
    seeded init, data order and masking, deterministic kernels; the caller's global torch
    RNG state is restored afterwards. `progress`: None uses `mimirlib.progress.progress`,
    False disables, or a callable `(iterable=None, total=None, desc="")`.
    """
    from transformers import BertConfig, BertForMaskedLM

    out_dir = Path(out_dir)
    texts = as_text_list(texts)
    sizes = dict(hidden=hidden, layers=layers, heads=heads, max_len=max_len, epochs=epochs, batch_size=batch_size)
    _check_arguments(texts, out_dir, lr=lr, vocab_size=vocab_size, **sizes)

    started = time.perf_counter()
    bar_factory = progress_factory(progress)
    with _deterministic_torch(seed):
        raw_tok, tokenizer = train_wordpiece(texts, vocab_size, max_len)
        windows = _windows(raw_tok, texts, max_len)
        vocab = len(tokenizer)
        config = BertConfig(
            vocab_size=vocab,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=4 * hidden,
            max_position_embeddings=max_len,
            pad_token_id=tokenizer.pad_token_id,
        )
        model = BertForMaskedLM(config)
        model.train()
        total = epochs * math.ceil(len(windows) / batch_size)
        bar = bar_factory(total=total, desc="training masked LM")
        try:
            epoch_losses = _train_epochs(
                model, windows, tokenizer, epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, bar=bar
            )
        finally:
            bar.close()
    model.eval()

    info = {
        # the name it was first published under: lab records stay byte-identical
        "kind": "BERT-style masked LM trained by mimirlib.neighbors.train_masked_lm",
        "n_texts": len(texts),
        "n_windows": len(windows),
        "n_tokens": int(sum(len(w) for w in windows)),
        "vocab_size": vocab,
        "requested_vocab_size": vocab_size,
        **sizes,
        "lr": lr,
        "seed": seed,
        "steps": total,
        "epoch_mean_loss": epoch_losses,
        "train_seconds": round(time.perf_counter() - started, 2),
    }
    _save(out_dir, model, tokenizer, info)
    return out_dir
