"""Masked-LM neighbours for the neighbourhood attack (Mattern et al., 2023).

The paper (MIMIR, App. A.4) makes 25 neighbours per text with BERT, replacing 5% of the
tokens "in place". No BERT can be downloaded in the embedded lab, so `train_masked_lm`
trains a small BERT-style masked LM on the lab's own corpus; `load_masked_lm` loads either
that folder or a real hub model (``bert-base-uncased``) through the same ``from_pretrained``
code, and `generate_neighbors` works with both. Training, loading and the sampling pieces
live in :mod:`mimirlib.samplers.mlm` (the first two are re-exported here); this module owns the
neighbour variant.

Variant implemented ("joint-mask, in-place swap"): for each neighbour, k =
round(mask_fraction * n) positions are drawn among the n real tokens of the text (k >= 1);
all k are replaced by ``[MASK]`` in one forward pass, and each is filled with a token
sampled from the MLM's distribution at that position, excluding the original token,
special tokens, and tokens of another swap class (a ``##`` continuation piece only
replaces a continuation piece, a word start a word start, a punctuation mark a
punctuation mark), so the neighbour splits into the same words as the original. The
sampled token's text is spliced into the *original string* at the replaced token's
character offsets (MIMIR's ``original_tokenization_swap``), so everything else, case,
whitespace, newlines, indentation, and the text beyond the tokenizer window, stays
byte-identical.
Differences from the MIMIR code: it counts [CLS]/[SEP] in n and truncates (int) rather
than rounds; it scores positions one at a time with embedding dropout (p=0.7) instead of
[MASK], and keeps the highest-scoring swaps rather than sampling. Here each neighbour
costs one forward pass, batched across neighbours and texts, instead of one forward pass
per token of the text; neighbours of a short text may repeat (nothing deduplicates them).

Whole-word variant (``unit="word"``): k = max(1, round(mask_fraction * w)) of the text's w
eligible whole words (words with a non-empty core inside the MLM's first window) are replaced per
neighbour by :func:`mimirlib.samplers.mlm.words.distinct_variants`, the machinery of
:func:`mimirlib.samplers.perturb.substitute_words` (module doc there): each chosen word's core is
one mask, filled from the MLM's ``top_k`` most likely whole words other than the original, so a
neighbour is exactly k words away from its text (word Hamming distance) and the small lab MLM
cannot make non-words out of word pieces; a text's neighbours are distinct. The paper's
neighbourhood attack (Mattern et al.) likewise replaces words with BERT's top candidates.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from mimirlib.samplers.mlm import SPECIAL_TOKENS, load_masked_lm, train_masked_lm
from mimirlib.samplers.mlm.inputs import as_text_list, check_texts
from mimirlib.samplers.mlm.sampling import eval_mode, masked_logits, sample_ids, splice, text_rng, window_limit
from mimirlib.samplers.mlm.vocab import WHITESPACE, vocab_info
from mimirlib.samplers.mlm.words import distinct_variants, masked_lm_setup, word_cores
from mimirlib.core.engines import EngineError, map_batches, resolve_engine
from mimirlib.core.models import model_fingerprint, right_pad
from mimirlib.progress import progress_factory

# Forward passes of ``batch_size`` rows per shard under the ``ray`` engine: enough work per task to
# hide its overhead (a few ms), small enough that two workers share a lab-sized job evenly.
PASSES_PER_SHARD = 4
UNITS = ("token", "word")  # what a neighbour replaces: word pieces in place, or whole words
# Rounds of draws before a text without n_neighbors distinct whole-word neighbours raises.
WORD_ROUNDS = 10

__all__ = ["SPECIAL_TOKENS", "train_masked_lm", "load_masked_lm", "generate_neighbors"]


def generate_neighbors(
    texts: Sequence[str],
    model,
    tokenizer,
    *,
    n_neighbors: int = 25,
    mask_fraction: float = 0.05,
    seed: int = 0,
    batch_size: int = 32,
    max_length: int = 512,
    progress=None,
    engine="local",
    ray_address: str | None = None,
    unit: str = "token",
    top_k: int | None = None,
) -> list[list[str]]:
    """`n_neighbors` neighbours of each text: k = round(mask_fraction * n) of its n real tokens
    (at least 1) swapped in place for MLM samples (the variant is described in the module doc).

    ``unit="word"`` replaces k = max(1, round(mask_fraction * w)) of the text's w eligible whole
    words instead (module doc), fills drawn from the MLM's `top_k` most likely allowed words (None:
    all of them; the token unit accepts only None); since k <= w, no text has too few words, but a
    text with no eligible word raises, as does one that has fewer than `n_neighbors` distinct
    neighbours after WORD_ROUNDS rounds (a short text with a small `top_k`), naming its index.
    Word neighbours are distinct; a text's neighbours depend on (text, seed, k, top_k, model) only.

    Only the first `max_length` tokens (including [CLS]/[SEP]; also capped by the model's
    positions) are seen by the MLM and perturbed, and n counts those; the rest of a longer
    text is kept unchanged (a warning says how many texts were cut). Positions that cannot
    be swapped cleanly ([UNK], tokens holding whitespace or sharing a character span) are
    never chosen; whitespace is always kept as in the original. Deterministic under `seed`:
    a text's neighbours depend on the text, seed, model and parameters, not on its position
    in `texts` or on `batch_size`. `batch_size` counts neighbour rows per forward pass.
    Empty or blank texts, and texts with no swappable token, raise ValueError naming the index.

    ``engine="ray"`` (``ray_address``: see :mod:`mimirlib.core.engines`) shards the texts, longest first,
    over Ray workers that each load the masked LM once from where ``model`` was loaded (its
    ``name_or_path``, same files): since a text's neighbours depend on nothing else, the result
    is the local engine's.
    """
    _check_unit(unit, top_k)
    runner = resolve_engine(engine, ray_address)
    texts = as_text_list(texts)
    if not isinstance(n_neighbors, int) or n_neighbors < 1:
        raise ValueError(f"n_neighbors must be an integer >= 1, got {n_neighbors!r}")
    if not 0 < mask_fraction <= 1:
        raise ValueError(f"mask_fraction must be in (0, 1], got {mask_fraction!r}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    if not isinstance(max_length, int) or max_length < 3:
        raise ValueError(f"max_length must be an integer >= 3, got {max_length!r}")
    check_texts(texts, blank="it has no token to replace")
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError("generate_neighbors needs a fast tokenizer (character offsets)")
    if tokenizer.mask_token_id is None:
        raise ValueError("the tokenizer has no mask token")
    if not texts:
        return []
    if runner is not None:
        kw = dict(n_neighbors=n_neighbors, mask_fraction=mask_fraction, seed=seed, batch_size=batch_size)
        kw |= dict(unit=unit, top_k=top_k)
        return _sharded(texts, model, runner, max_length=max_length, progress=progress, **kw)
    if unit == "word":
        return _word_neighbors(
            texts, model, tokenizer, n_neighbors, mask_fraction, seed, top_k, batch_size, max_length, progress
        )

    vocab = vocab_info(tokenizer, model.get_output_embeddings().weight.shape[0])
    plans, rows = _plan(texts, model, tokenizer, vocab, n_neighbors, mask_fraction, seed, max_length)
    bar = progress_factory(progress)(total=math.ceil(len(rows) / batch_size), desc="neighbours")
    try:
        with eval_mode(model), torch.inference_mode():
            fills = _fill(rows, plans, model, tokenizer, vocab, batch_size, bar)
    finally:
        bar.close()

    out: list[list[str]] = [[] for _ in texts]
    for (i, pos, _), fill in zip(rows, fills):
        _, offsets, starts = plans[i]
        spans = [(starts[p], offsets[p][1]) for p in pos.tolist()]
        out[i].append(splice(texts[i], spans, [vocab.core[t] for t in fill.tolist()]))
    return out


def _check_unit(unit, top_k) -> None:
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {list(UNITS)}, got {unit!r}")
    if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1):
        raise ValueError(f"top_k must be None or an integer >= 1, got {top_k!r}")
    if unit == "token" and top_k is not None:
        raise ValueError(f"top_k applies to unit='word' only, got top_k={top_k!r} with unit='token'")


@dataclass(frozen=True)
class MaskedLMSpec:
    """How a Ray worker loads the caller's masked LM (:func:`load_masked_lm`), and the files' digest
    it must then find (:func:`mimirlib.core.models.model_fingerprint`)."""

    name_or_path: str
    fingerprint: str

    @property
    def key(self) -> str:
        return f"mlm|{self.fingerprint}"

    def load(self):
        if model_fingerprint(self.name_or_path) != self.fingerprint:
            raise EngineError(f"a Ray worker found other files for the masked LM {self.name_or_path!r}")
        return load_masked_lm(self.name_or_path)


def neighbors_of_shard(loaded, texts: list[str], **kw) -> list[list[str]]:
    """:func:`generate_neighbors` on a Ray worker: ``loaded`` is the (model, tokenizer) its spec loaded."""
    model, tokenizer = loaded
    return generate_neighbors(texts, model, tokenizer, progress=False, **kw)


def _sharded(texts, model, runner, *, max_length, progress, **kw) -> list[list[str]]:
    source = str(getattr(model, "name_or_path", "") or "")
    if source and os.path.isdir(source):  # workers may start elsewhere: a folder by its absolute path
        source = os.path.abspath(source)
    try:
        spec = MaskedLMSpec(source, model_fingerprint(source))
    except OSError:
        spec = None
    if not source or spec is None:
        raise EngineError(
            "engine='ray' needs a masked LM loaded by name or folder (load_masked_lm), so that workers can load it"
        )
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    size = max(1, math.ceil(PASSES_PER_SHARD * kw["batch_size"] / kw["n_neighbors"]))
    shards = [order[i : i + size] for i in range(0, len(order), size)]
    out: list[list[str]] = [[] for _ in texts]
    desc = "neighbours" if progress is not False else ""
    results = map_batches(
        runner,
        spec,
        neighbors_of_shard,
        [[texts[i] for i in shard] for shard in shards],
        costs=[sum(len(texts[i]) for i in shard) for shard in shards],
        desc=desc,
        max_length=max_length,
        **kw,
    )
    for b, neigh in results:
        for i, row in zip(shards[b], neigh):
            out[i] = row
    return out


def _plan(texts, model, tokenizer, vocab, n_neighbors, mask_fraction, seed, max_length):
    """Per text, its first window's (ids, offsets, {position: start of its text}); per neighbour,
    a row (text index, sorted positions to swap, one uniform per position), drawn from the text's
    own generator. Warns about texts longer than the window."""
    window = window_limit(model, tokenizer, max_length)
    enc = tokenizer(
        texts,
        truncation=True,
        max_length=window,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
    )
    mapping = enc["overflow_to_sample_mapping"]
    first_row: dict[int, int] = {}
    n_rows_per_text = np.bincount(np.asarray(mapping, dtype=np.int64), minlength=len(texts))
    for r, i in enumerate(mapping):
        first_row.setdefault(int(i), r)
    n_cut = int((n_rows_per_text > 1).sum())
    if n_cut:
        warnings.warn(
            f"{n_cut} of {len(texts)} texts are longer than the masked LM's window of {window} tokens: "
            "only their first part is perturbed, the rest is kept unchanged",
            stacklevel=3,
        )

    special_ids = set(tokenizer.all_special_ids)
    class_has_candidates = vocab.allowed.any(dim=1).tolist()  # per swap class
    plans = []  # per text: (ids, offsets, core span starts)
    rows = []  # (text index, positions, uniforms), a text's n_neighbors rows together
    for i, text in enumerate(texts):
        r = first_row[i]
        ids, offsets, smask = enc["input_ids"][r], enc["offset_mapping"][r], enc["special_tokens_mask"][r]
        n_real = sum(1 for p in range(len(ids)) if not smask[p])
        starts = {}
        for p in range(len(ids)):
            if smask[p] or ids[p] in special_ids:
                continue
            s, e = offsets[p]
            span = text[s:e]
            stripped = span.lstrip()
            s2 = s + len(span) - len(stripped)
            if s2 >= e or WHITESPACE.search(stripped) or ids[p] >= len(vocab.core):
                continue
            overlaps = any(
                0 <= q < len(ids) and q != p and not smask[q] and offsets[q][0] < e and s < offsets[q][1]
                for q in (p - 1, p + 1)
            )
            if not overlaps and class_has_candidates[vocab.klass[ids[p]]]:
                starts[p] = s2
        if not starts:
            raise ValueError(f"texts[{i}] has no token the masked LM can replace (only special or [UNK] tokens)")
        eligible = np.asarray(list(starts))
        k = min(len(eligible), max(1, int(math.floor(mask_fraction * n_real + 0.5))))
        rng = text_rng(text, seed)
        plans.append((ids, offsets, starts))
        for _ in range(n_neighbors):
            pos = np.sort(rng.choice(eligible, size=k, replace=False))
            rows.append((i, pos, rng.random(k)))
    return plans, rows


def _fill(rows, plans, model, tokenizer, vocab, batch_size, bar) -> list[np.ndarray]:
    """The sampled ids for each row's positions: all of a row's positions masked in one forward
    pass, each filled from the ids of its swap class other than the original."""
    # longest rows first, so each forward pass pads little; outputs do not depend on this order
    order = sorted(range(len(rows)), key=lambda r: -len(plans[rows[r][0]][0]))
    fills: dict[int, np.ndarray] = {}
    device = next(model.parameters()).device
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    for b in range(0, len(order), batch_size):
        chunk = order[b : b + batch_size]
        ids_t, att = right_pad([plans[rows[r][0]][0] for r in chunk], pad_id)
        rr, cc, orig, us = [], [], [], []
        for slot, r in enumerate(chunk):
            i, pos, u = rows[r]
            ids = plans[i][0]
            ids_t[slot, torch.from_numpy(pos)] = tokenizer.mask_token_id
            rr.extend([slot] * len(pos))
            cc.extend(pos.tolist())
            orig.extend(ids[p] for p in pos)
            us.extend(u.tolist())
        rr_t, cc_t = torch.tensor(rr), torch.tensor(cc)
        logits = masked_logits(model, ids_t.to(device), att.to(device), rr_t.to(device), cc_t.to(device))
        logits = logits.float().cpu()
        orig_t = torch.tensor(orig)
        sampled = torch.empty(len(rr), dtype=torch.long)
        step = max(1, 2**22 // logits.shape[-1])  # bound the float64 cumsum's memory
        for a in range(0, len(rr), step):
            sl = slice(a, a + step)
            allowed = vocab.allowed[torch.from_numpy(vocab.klass[orig_t[sl].numpy()])].clone()
            allowed[torch.arange(allowed.shape[0]), orig_t[sl]] = False
            sampled[sl] = sample_ids(logits[sl], allowed, torch.tensor(us[sl]))
        at = 0
        for r in chunk:
            n = len(rows[r][1])
            fills[r] = sampled[at : at + n].numpy()
            at += n
        bar.update(1)
    return [fills[r] for r in range(len(rows))]


def _word_neighbors(texts, model, tokenizer, n_neighbors, mask_fraction, seed, top_k, batch_size, max_length, progress):
    """``unit="word"``: k = max(1, round(mask_fraction * w)) of each text's w eligible words
    replaced per neighbour, n_neighbors distinct neighbours (module doc)."""
    setup = masked_lm_setup(texts, model, tokenizer, max_length, "generate_neighbors")
    ks = []
    for i, cores in enumerate(setup.cores):
        if not cores:
            raise ValueError(f"texts[{i}] has no word the masked LM can replace")
        ks.append(max(1, int(math.floor(mask_fraction * len(cores) + 0.5))))
    n_cut = sum(len(c) < len(word_cores(t, len(t))) for t, c in zip(texts, setup.cores))
    if n_cut:
        warnings.warn(
            f"{n_cut} of {len(texts)} texts are longer than the masked LM's window of {setup.window} tokens: "
            "only their first part is perturbed, the rest is kept unchanged",
            stacklevel=3,
        )
    bar = progress_factory(progress)(total=None, desc="neighbours (words)")
    try:
        return distinct_variants(
            setup,
            ks,
            n_neighbors,
            model,
            tokenizer,
            seed=seed,
            salt="neighbors-words",
            top_k=top_k,
            batch_size=batch_size,
            max_rounds=WORD_ROUNDS,
            bar=bar,
        )
    finally:
        bar.close()
