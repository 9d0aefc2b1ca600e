"""The reference implementation's scoring loop, re-implemented faithfully: the baseline ``make bench`` times.

github.com/iamgroot42/mimir scores LOSS, zlib, Min-K%, Min-K%++ and the reference attack like this
(written here from its description in RESOURCES.md section 6, checked against its source, not copied):

- **one text at a time** (batch size 1), tokenized whole with ``tokenizer(text)`` (special tokens as the
  tokenizer adds them, no truncation);
- **its sliding windows**: for ``i = 0, stride, 2 * stride, ...`` one forward pass over tokens
  ``[max(i + stride - window, 0), min(i + stride, n))`` that scores tokens ``[i, min(i + stride, n))``;
  the window is the model's ``max_position_embeddings`` (else ``n_positions``, else 1024) and the stride
  half of it (512 and 256 for the lab's models). Every token is scored once; the first token never is.
  Each pass also asks the model for its loss (``labels=`` with context tokens set to -100), as the
  reference does;
- the **full window x vocabulary log-softmax** of every pass, read by a **per-token Python loop** that
  takes each target token's log-probability with ``.item()`` and keeps that position's whole row; the
  rows are stacked into one ``[n - 1, V]`` tensor for Min-K%++;
- **one target pass shared** by LOSS, zlib, Min-K% and Min-K%++, plus **one reference-model pass** per
  text for the reference attack.

Scores are returned in mimirlib's convention (higher = more likely a member): the reference's
loss-like values negated. Two of its rules are kept because they are its behaviour:

- **Min-K% k rule**: the ``floor(k * n)`` lowest of ``n`` scored tokens (picked by its n-gram loop at its
  defaults, one token per n-gram, run in Python as it does), with no minimum, so a text with fewer than
  ``1 / k`` scored tokens (5 at k = 0.2) gets an empty selection and the score is NaN
  (:func:`mimirlib.core.attacks.lowest_k` keeps at least one token instead). Min-K%++ uses the same rule.
- **Min-K%++'s sigma** is the square root of ``E[(log p)^2] - E[log p]^2`` unclamped, computed in the
  model's precision. For a bfloat16 model the reference's own code stops here (``Tensor.numpy()`` has no
  bfloat16: TypeError); this loop converts those two length-``n`` vectors to float32 first, which costs
  nothing measurable, so that it can be timed in bfloat16 too.

One of its defects is deliberately *not* reproduced: on Python >= 3.11 the reference also runs its
reference attack inside the main loop with the target's own probabilities (an enum formatted by an
f-string), which yields 0 and then ``min(0, score)``. That call reuses probabilities already computed
(no forward pass), so leaving it out changes no timing; the ``ref`` scores here are the attack as
intended, so they can be compared with mimirlib's.
"""

from __future__ import annotations

import zlib
from typing import Sequence

import numpy as np
import torch

from mimirlib.core.signals import Span, resolve_window

REFERENCE_ATTACKS = ("loss", "zlib", "min_k", "min_k_pp", "ref")
# The reference's window when a model's config states no context length.
REFERENCE_DEFAULT_WINDOW = 1024


def reference_window(loaded) -> tuple[int, int]:
    """(window, stride) the reference uses for ``loaded``: its config's context length and half of it."""
    config = loaded.model.config
    for field in ("max_position_embeddings", "n_positions"):
        value = getattr(config, field, None)
        if isinstance(value, int) and value >= 2:
            return value, value // 2
    return REFERENCE_DEFAULT_WINDOW, REFERENCE_DEFAULT_WINDOW // 2


def reference_spans(n_tokens: int, window: int, stride: int) -> list[Span]:
    """The reference's passes over a text of ``n_tokens``: input ``[begin, end)``, scored ``[first, end)``.

    Unlike :func:`mimirlib.core.signals.windows`, a pass always starts a multiple of ``stride`` tokens in,
    so the last, partial step gives its tokens only ``window - stride`` tokens of left context (the
    engine gives them a full window), and a text shorter than the window is still run in
    ``stride``-token steps, each from the text's start. Where ``window`` is a multiple of ``stride`` and
    the text is no longer than the window or a multiple of ``stride`` long, both rules give every
    token the same left context.
    """
    spans = []
    for i in range(0, n_tokens, stride):
        end = min(i + stride, n_tokens)
        spans.append(Span(max(i + stride - window, 0), end, max(i, 1)))
    return spans


def token_log_probs(loaded, text: str, window: int, stride: int) -> tuple[list[float], torch.Tensor]:
    """The reference's ``get_probabilities(text, return_all_probs=True)``: the target tokens'
    log-probabilities (Python floats) and every scored position's full log-softmax row, stacked."""
    ids = loaded.tokenizer(text, return_tensors="pt").input_ids
    n = ids.shape[1]
    if n < 2:
        raise ValueError(f"text {text[:60]!r} has {n} token(s); at least 2 are needed to score it")
    target: list[float] = []
    rows: list[torch.Tensor] = []
    with torch.no_grad():
        for sp in reference_spans(n, window, stride):
            input_ids = ids[:, sp.begin : sp.end].to(loaded.device)
            labels = input_ids.clone()
            labels[:, : sp.first - sp.begin] = -100  # context: run, not scored
            logits = loaded.model(input_ids, labels=labels).logits.cpu()
            logp = torch.log_softmax(logits[..., :-1, :].contiguous(), dim=-1)
            shifted = labels[..., 1:].cpu().contiguous()[0]
            for j, token in enumerate(shifted):
                if token != -100:
                    target.append(logp[0, j, token].item())
                    rows.append(logp[0, j])
    if len(target) != n - 1:  # the reference asserts this too
        raise RuntimeError(f"reference loop scored {len(target)} of {n - 1} tokens of {text[:60]!r}")
    return target, torch.stack(rows, dim=0)


def _lowest_mean(values, k: float) -> float:
    """Mean of the ``floor(k * n)`` lowest values, chosen with Python's ``sorted`` as the reference does;
    NaN when that is none (the reference's ``np.mean`` of an empty list, without its warning)."""
    lowest = sorted(values)[: int(len(values) * k)]
    return float(np.mean(lowest)) if lowest else float("nan")


def _min_k(probs: list[float], k: float) -> float:
    """The reference's Min-K%: its n-gram loop at its defaults (window 1, stride 1), one ``np.mean``
    per token in Python, then the ``floor(k * n)`` lowest."""
    grams = [np.mean(probs[i : i + 1]) for i in range(len(probs))]
    return _lowest_mean(grams, k)


def reference_loop_scores(
    target,
    reference,
    texts: Sequence[str],
    *,
    window: int | None = None,
    stride: int | None = None,
    k: float = 0.2,
) -> dict[str, np.ndarray]:
    """Scores of :data:`REFERENCE_ATTACKS` for ``texts`` (higher = member), computed the reference's way.

    ``target`` and ``reference`` are :class:`mimirlib.core.models.LoadedModel`. ``window`` defaults to each
    model's :func:`reference_window`, ``stride`` to half the window; given, they apply to both models.
    """
    if not 0 < k <= 1:
        raise ValueError(f"k must be in (0, 1], got {k}")
    # resolve_window checks the values; its default stride, half the window, is the reference's rule too
    sizes = {
        id(m): resolve_window(m, reference_window(m)[0] if window is None else window, stride)
        for m in (target, reference)
    }
    out: dict[str, list[float]] = {a: [] for a in REFERENCE_ATTACKS}
    for text in texts:
        probs, all_probs = token_log_probs(target, text, *sizes[id(target)])
        loss = -np.mean(probs)  # one pass, shared by the four loss-based attacks
        out["loss"].append(-loss)
        out["zlib"].append(-loss / len(zlib.compress(bytes(text, "utf-8"))))
        out["min_k"].append(_min_k(probs, k))
        mu = (torch.exp(all_probs) * all_probs).sum(-1)
        sigma = (torch.exp(all_probs) * torch.square(all_probs)).sum(-1) - torch.square(mu)
        with np.errstate(divide="ignore", invalid="ignore"):  # sigma can round to 0 in bfloat16
            z = (np.array(probs) - mu.float().numpy()) / sigma.sqrt().float().numpy()
        out["min_k_pp"].append(_lowest_mean(z, k))
        ref_probs, _ = token_log_probs(reference, text, *sizes[id(reference)])
        out["ref"].append(-(loss - (-np.mean(ref_probs))))
    return {a: np.array(v, dtype=np.float64) for a, v in out.items()}
