"""Signals that need more than one plain forward pass: a prefix-conditioned pass (ReCaLL), token ids
with a corpus's token frequencies (DC-PDD), and a backward pass (gradient norm).

Each is cached the way :mod:`mimirlib.core.signals` caches the plain pass, through its public
:class:`~mimirlib.core.signals.SignalCache`: one SQLite file per (model identity, window, stride), here
with the identity extended by what else decides the numbers (the hash of the prefix texts and the
prefix budget; the chosen parameters), so nothing computed one way is ever read back as another.
A text is scored whole, with the same sliding windows (:func:`mimirlib.core.signals.windows`).

**ReCaLL's prefix never meets the evaluated texts**: :func:`check_disjoint` raises when a prefix
text is also a text to score (the reference implementation drew its prefix from the evaluated
non-members, so those texts scored themselves).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from mimirlib.core.models import right_pad
from mimirlib.progress import log, progress
from mimirlib.core.signals import (
    SignalCache,
    TokenSignals,
    compute_signals,
    lookup,
    resolve_window,
    text_key,
    windows,
)

# Tokens per forward pass at most in the prefix-conditioned pass (as the plain engine).
TOKENS_PER_PASS = 4096


# ----------------------------------------------------------------------------- ReCaLL


class PrefixLeak(ValueError):
    """A ReCaLL prefix text is also among the texts to score."""


def check_disjoint(prefix_texts: Sequence[str], texts: Sequence[str]) -> None:
    """Raise :class:`PrefixLeak` naming the first prefix text that is also a text to score (compared
    after stripping surrounding white space), or when there is no prefix text at all."""
    if not prefix_texts:
        raise ValueError("ReCaLL needs at least one prefix text (known non-member text)")
    scored = {t.strip() for t in texts}
    for t in prefix_texts:
        if t.strip() in scored:
            raise PrefixLeak(f"ReCaLL prefix text {t[:60]!r} is also a text to score: the prefix must be disjoint")


@dataclass(frozen=True)
class RecallSetup:
    """How the prefix-conditioned pass runs: ``window`` tokens a pass in all, the last
    ``prefix_tokens`` of the prefix first, then the text in windows of ``window - prefix_tokens``
    tokens at half that stride (the unconditioned comparison uses the same text windows)."""

    window: int
    prefix_tokens: int

    @property
    def text_window(self) -> int:
        return self.window - self.prefix_tokens

    @property
    def text_stride(self) -> int:
        return max(1, self.text_window // 2)


def recall_setup(loaded, window: int | None = None, prefix_tokens: int | None = None) -> RecallSetup:
    """The :class:`RecallSetup` for ``loaded``: ``window`` defaults to the model's trained context,
    ``prefix_tokens`` to half of it. Raises ValueError naming a budget that leaves under 2 text tokens."""
    w, _ = resolve_window(loaded, window, None)
    p = w // 2 if prefix_tokens is None else prefix_tokens
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or not 1 <= p <= w - 2:
        raise ValueError(f"prefix_tokens must be an integer with 1 <= prefix_tokens <= window - 2 ({w - 2}), got {p!r}")
    return RecallSetup(int(w), int(p))


def prefix_ids(tokenizer, prefix_texts: Sequence[str], budget: int) -> list[int]:
    """The prefix as token ids: each text followed by the end-of-text token (how training separates
    documents; nothing when the tokenizer has none), keeping the last ``budget`` tokens."""
    eos = tokenizer.eos_token_id
    ids: list[int] = []
    for row in tokenizer(list(prefix_texts), add_special_tokens=False, verbose=False)["input_ids"]:
        ids += list(row) + ([eos] if eos is not None else [])
    return ids[-budget:]


def prefix_digest(prefix_texts: Sequence[str]) -> str:
    return hashlib.sha256("\x00".join(prefix_texts).encode("utf-8")).hexdigest()[:20]


def _scored_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> tuple[np.ndarray, ...]:
    """log p(target), E[log p] and Var[log p] of ``N`` positions' logits ([N, V]), in float32."""
    lsm = torch.log_softmax(logits.float(), dim=-1)
    p = lsm.exp()
    mean = (p * lsm).sum(-1)
    var = ((p * lsm.square()).sum(-1) - mean.square()).clamp_min(0.0)
    lp = lsm.gather(-1, targets[:, None]).squeeze(-1)
    return tuple(t.cpu().numpy().astype(np.float32) for t in (lp, mean, var))


def recall_signals(
    loaded,
    texts: Sequence[str],
    prefix_texts: Sequence[str],
    *,
    cache: SignalCache | None = None,
    window: int | None = None,
    prefix_tokens: int | None = None,
    batch_size: int = 16,
    desc: str = "recall",
) -> "RecallSignals":
    """Signals after the prefix and without it for each text, on the same text windows
    (:class:`RecallSetup`), each text's tokens after the first, exactly once.

    Raises :class:`PrefixLeak` before any pass when a prefix text is also in ``texts``. Both are
    cached: the unprefixed pass is the plain pass at the text window (shared with any other use of
    that window), the prefixed one under the model's identity extended by the prefix's hash and budget.
    """
    check_disjoint(prefix_texts, texts)
    setup = recall_setup(loaded, window, prefix_tokens)
    tw, ts = setup.text_window, setup.text_stride
    kw = dict(cache=cache, window=tw, stride=ts, batch_size=batch_size)
    t0 = time.perf_counter()
    plain = compute_signals(loaded, list(texts), desc=f"{desc} unprefixed", **kw)
    model_id = f"{loaded.cache_id}|recall-prefix={prefix_digest(prefix_texts)}|prefix_tokens={setup.prefix_tokens}"
    keys = [text_key(t) for t in texts]
    found, todo = lookup(cache, model_id, tw, ts, keys)
    if todo:
        tok = loaded.tokenizer
        pre = prefix_ids(tok, prefix_texts, setup.prefix_tokens)
        by_key = dict(zip(keys, texts))
        ids = tok([by_key[k] for k in todo], add_special_tokens=False, verbose=False)["input_ids"]
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        per_pass = max(1, min(batch_size, TOKENS_PER_PASS // setup.window))
        batches = [list(range(i, min(i + batch_size, len(todo)))) for i in range(0, len(todo), batch_size)]
        for batch in progress(batches, desc=f"{desc} prefixed ({Path(str(loaded.name)).name})"):
            rows = [(i, sp) for i in batch for sp in windows(len(ids[i]), tw, ts)]
            parts: dict[int, list] = {i: [] for i in batch}
            for j in range(0, len(rows), per_pass):
                chunk = rows[j : j + per_pass]
                seqs = [pre + list(ids[i][sp.begin : sp.end]) for i, sp in chunk]
                input_ids, mask = right_pad(seqs, pad)
                with torch.inference_mode():
                    logits = loaded.model(
                        input_ids=input_ids.to(loaded.device), attention_mask=mask.to(loaded.device)
                    ).logits
                    for r, (i, sp) in enumerate(chunk):
                        start = len(pre) + sp.first - sp.begin  # the first scored position of this row
                        pos = torch.arange(start, len(seqs[r]), device=logits.device)
                        parts[i].append(
                            (sp.first, _scored_logprobs(logits[r, pos - 1], input_ids[r, pos.cpu()].to(logits.device)))
                        )
            items = {}
            for i in batch:
                pieces = [a for _, a in sorted(parts[i], key=lambda x: x[0])]
                sig = TokenSignals(*(np.concatenate(col) for col in zip(*pieces)))
                if len(sig) != len(ids[i]) - 1:
                    raise RuntimeError(f"scored {len(sig)} of {len(ids[i]) - 1} tokens of {by_key[todo[i]][:60]!r}")
                items[todo[i]] = sig
            found.update(items)
            if cache:
                cache.put_many(model_id, tw, ts, items)
    return RecallSignals([found[k] for k in keys], plain, time.perf_counter() - t0, len(todo))


@dataclass(frozen=True)
class RecallSignals:
    """Each text's signals after the prefix and without it (same windows), with what computing them
    cost: seconds for both passes, and the number of texts whose prefixed pass was not cached."""

    prefixed: list[TokenSignals]
    unprefixed: list[TokenSignals]
    seconds: float
    computed: int


# ----------------------------------------------------------------------------- DC-PDD


def scored_token_ids(loaded, texts: Sequence[str]) -> list[np.ndarray]:
    """The ids of each text's scored tokens (every token after the first), aligned with its signals:
    a tokenization, no forward pass."""
    rows = loaded.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]
    return [np.asarray(r[1:], dtype=np.int64) for r in rows]


def _vocab_digest(tokenizer) -> str:
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    return hashlib.sha256(json.dumps(vocab).encode("utf-8")).hexdigest()


def token_frequencies(tokenizer, corpus: Sequence[str], *, cache: SignalCache | None = None) -> np.ndarray:
    """Each vocabulary id's frequency in ``corpus`` (texts, tokenized whole), Laplace-smoothed:
    ``(1 + count) / (total + V)``, so an id the corpus lacks is rare, not impossible (the reference
    implementation's smoothing). Cached as a ``.npy`` keyed by the vocabulary and the corpus texts."""
    corpus = list(corpus)
    if not corpus:
        raise ValueError("the token-frequency corpus has no texts")
    key = hashlib.sha256(f"{_vocab_digest(tokenizer)}|{prefix_digest(corpus)}|{len(corpus)}".encode()).hexdigest()[:20]
    path = cache.root / "token-freq" / f"{key}.npy" if cache else None
    if path is not None and path.is_file():
        return np.load(path)
    size = len(tokenizer)
    counts = np.zeros(size, dtype=np.int64)
    for row in tokenizer(corpus, add_special_tokens=False, verbose=False)["input_ids"]:
        counts += np.bincount(np.asarray(row, dtype=np.int64), minlength=size)[:size]
    freq = (1.0 + counts) / (counts.sum() + size)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, freq)
        os.replace(tmp, path)
    return freq


# ----------------------------------------------------------------------------- gradient norm


def select_parameters(model, pattern: str | None = None) -> list[tuple[str, torch.nn.Parameter]]:
    """The named parameters whose name matches ``pattern`` (comma-separated shell globs, e.g.
    ``"lm_head.*"`` or ``"*layers.0.*,*layers.1.*"``); all of them for None. Raises ValueError
    naming the pattern when it matches nothing."""
    named = list(model.named_parameters())
    if pattern is None:
        return named
    globs = [g.strip() for g in str(pattern).split(",") if g.strip()]
    chosen = [(n, p) for n, p in named if any(fnmatch.fnmatchcase(n, g) for g in globs)]
    if not chosen:
        raise ValueError(
            f"grad_params {pattern!r} matches no parameter; names look like {', '.join(repr(n) for n, _ in named[:3])}"
        )
    return chosen


@dataclass(frozen=True)
class GradNorms:
    """Gradient norms of texts, with what the computed ones cost (seconds, texts)."""

    norms: list[float]
    seconds: float
    computed: int

    @property
    def ms_per_text(self) -> float | None:
        return 1000 * self.seconds / self.computed if self.computed else None


def _grad_norm_of(model, ids: list[int], window: int, stride: int, chosen, device) -> float:
    """The L2 norm over ``chosen`` of the gradient of the text's mean token loss, its windows'
    gradients accumulated (each window's loss weighted by its share of the scored tokens)."""
    n = len(ids) - 1
    model.zero_grad(set_to_none=True)
    with torch.enable_grad():
        for sp in windows(len(ids), window, stride):
            inp = torch.tensor(ids[sp.begin : sp.end], dtype=torch.long, device=device)[None]
            logits = model(input_ids=inp).logits[0]
            pos = torch.arange(sp.first - sp.begin, sp.end - sp.begin, device=device)
            lp = torch.log_softmax(logits[pos - 1].float(), dim=-1).gather(-1, inp[0, pos][:, None])
            (-lp.sum() / n).backward()
    sq = sum(float(p.grad.float().square().sum()) for _, p in chosen if p.grad is not None)
    model.zero_grad(set_to_none=True)
    return float(np.sqrt(sq))


def gradient_norms(
    loaded,
    texts: Sequence[str],
    *,
    cache: SignalCache | None = None,
    window: int | None = None,
    stride: int | None = None,
    params: str | None = None,
    desc: str = "grad norm",
) -> GradNorms:
    """Per text, the L2 norm of the gradient of its mean token loss (every token after the first,
    sliding windows as :func:`mimirlib.core.signals.compute_signals`) with respect to the parameters
    ``params`` selects (:func:`select_parameters`; all weights for None). One forward and one
    backward pass per window, one text at a time; logs the cost per computed text. Cached (as a
    one-value signal) under the model's identity extended by ``params``."""
    window, stride = resolve_window(loaded, window, stride)
    model = loaded.model
    chosen = select_parameters(model, params)
    model_id = f"{loaded.cache_id}|grad-norm|params={params or '*'}"
    keys = [text_key(t) for t in texts]
    found, todo = lookup(cache, model_id, window, stride, keys)
    seconds = 0.0
    if todo:
        by_key = dict(zip(keys, texts))
        ids = loaded.tokenizer([by_key[k] for k in todo], add_special_tokens=False, verbose=False)["input_ids"]
        for k, row in zip(todo, ids):
            if len(row) < 2:
                raise ValueError(f"text {by_key[k][:60]!r} has {len(row)} token(s); at least 2 are needed to score it")
        keep = {id(p) for _, p in chosen}
        flags = [(p, p.requires_grad) for p in model.parameters()]
        t0 = time.perf_counter()
        try:
            for p, _ in flags:
                p.requires_grad_(id(p) in keep)
            items = {}
            for k, row in progress(list(zip(todo, ids)), desc=f"{desc} ({Path(str(loaded.name)).name})"):
                norm = _grad_norm_of(model, list(row), window, stride, chosen, loaded.device)
                items[k] = TokenSignals(*(np.array([v], dtype=np.float32) for v in (norm, 0.0, 0.0)))
        finally:
            for p, flag in flags:
                p.requires_grad_(flag)
        seconds = time.perf_counter() - t0
        found.update(items)
        if cache:
            cache.put_many(model_id, window, stride, items)
        log(
            f"{desc} ({Path(str(loaded.name)).name}): {len(todo)} texts in {seconds:.1f} s, "
            f"{1000 * seconds / len(todo):.1f} ms per text (forward + backward)"
        )
    return GradNorms([float(found[k].logprob[0]) for k in keys], seconds, len(todo))
