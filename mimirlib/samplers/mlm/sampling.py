"""What every masked-LM sampler shares: per-text generators, logits at the masked positions only,
inverse-CDF draws from pre-drawn uniforms, and splicing fills into the original string.

Together these make a sampler's output depend on (text, seed, parameters, model) only, not on a
text's position in the list or on batching, and keep everything outside the filled spans
byte-identical.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Sequence

import numpy as np
import torch

__all__ = [
    "text_rng",
    "salted_rng",
    "masked_logits",
    "window_limit",
    "sample_ids",
    "sample_candidates",
    "splice",
    "eval_mode",
]


def text_rng(text: str, seed: int) -> np.random.Generator:
    """A generator that depends on (text, seed) only (the neighbourhood attack's neighbours)."""
    digest = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng([seed & 0xFFFFFFFFFFFFFFFF, digest])


def salted_rng(text: str, seed: int, salt: str, n: int) -> np.random.Generator:
    """A generator that depends on (text, seed, what it is for, distance) only: `salt` names the
    sampler and `n` its distance or count, so two samplers never share a stream."""
    digest = hashlib.sha256(f"{salt}\x00{n}\x00".encode() + text.encode("utf-8")).digest()
    return np.random.default_rng([seed & 0xFFFFFFFFFFFFFFFF, int.from_bytes(digest[:8], "little")])


def masked_logits(model, input_ids, attention_mask, rows, cols):
    """MLM logits at the masked positions only: a [B, L, V] tensor of logits would not fit."""
    base = getattr(model, getattr(model, "base_model_prefix", ""), None)
    head = getattr(model, "cls", None)
    if head is None:
        head = getattr(model, "lm_head", None)
    if base is not None and head is not None:
        hidden = base(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return head(hidden[rows, cols])
    return model(input_ids=input_ids, attention_mask=attention_mask).logits[rows, cols]


def window_limit(model, tokenizer, max_length: int) -> int:
    """The longest input, in tokens, that `max_length`, the tokenizer and the model's positions allow."""
    limit = max_length
    tml = getattr(tokenizer, "model_max_length", None)
    if isinstance(tml, int) and 0 < tml < 10**8:
        limit = min(limit, tml)
    mpe = getattr(model.config, "max_position_embeddings", None)
    if isinstance(mpe, int) and mpe > 0:
        if "roberta" in getattr(model.config, "model_type", ""):
            mpe -= (model.config.pad_token_id or 0) + 1  # RoBERTa positions start after the pad id
        limit = min(limit, mpe)
    return limit


def sample_ids(logits: torch.Tensor, allowed: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """One id per row of `logits`, drawn from the softmax restricted to `allowed` (bool, same shape)
    by inverse-CDF sampling with the row's pre-drawn uniform, so results do not depend on batching."""
    probs = torch.softmax(logits.float(), dim=-1).double() * allowed
    return _inverse_cdf(probs, allowed, uniforms).clamp_(max=logits.shape[-1] - 1)


def _inverse_cdf(probs: torch.Tensor, allowed: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Per row, the first column whose cumulative ``probs`` (float64, zero where not ``allowed``)
    exceeds the row's uniform times their total: ``probs.shape[1]`` when none does (a uniform that
    rounds to the total). A row whose allowed probabilities all underflowed draws uniformly over allowed."""
    cum = torch.cumsum(probs, dim=-1)
    total = cum[:, -1]
    bad = ~(total > 0)
    if bad.any():
        cum[bad] = torch.cumsum(allowed[bad].double(), dim=-1)
        total = cum[:, -1]
    return torch.searchsorted(cum, (uniforms.double() * total).unsqueeze(1), right=True).squeeze(1)


def sample_candidates(
    logits: torch.Tensor, candidates: torch.Tensor, valid: torch.Tensor, uniforms: torch.Tensor
) -> torch.Tensor:
    """:func:`sample_ids` with ``allowed`` True exactly at each row's ``candidates`` (ids, [N, k])
    where ``valid`` ([N, k]) is: the same ids, from a cumulative sum over the k candidates only
    (in ascending id order, as ``sample_ids`` sums the whole row, whose other entries add exact
    zeros) instead of over the vocabulary. For top-k sampling, where k is a few dozen ids of thousands."""
    cand, order = candidates.sort(dim=1)
    ok = valid.gather(1, order)
    probs = torch.softmax(logits.float(), dim=-1).gather(1, cand).double() * ok
    j = _inverse_cdf(probs, ok, uniforms)
    picked = cand.gather(1, j.clamp(max=cand.shape[1] - 1)[:, None]).squeeze(1)
    # past every candidate (a uniform that rounds to the total): sample_ids's clamp to the last id
    return torch.where(j < cand.shape[1], picked, logits.shape[-1] - 1)


def splice(text: str, spans: Sequence[tuple[int, int]], fills: Sequence[str], *, capitalise: bool = False) -> str:
    """`text` with each (start, end) character span, in ascending order, replaced by its fill.

    `capitalise` (for an uncased masked LM): a lower-case fill of a span that starts with a
    capital gets a capital first letter, so "The" is not replaced by "a".
    """
    pieces, cursor = [], 0
    for (s, e), new in zip(spans, fills):
        if capitalise and text[s].isupper() and new[:1].islower():
            new = new[0].upper() + new[1:]
        pieces += [text[cursor:s], new]
        cursor = e
    pieces.append(text[cursor:])
    return "".join(pieces)


@contextlib.contextmanager
def eval_mode(model):
    """`model` in eval mode (no dropout) inside the block, its training flag restored after."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        if was_training:
            model.train()
