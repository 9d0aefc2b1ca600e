"""Whole-word masked-LM filling: the words of a text, one mask per chosen word, and fills sampled
from the masked LM's whole-word tokens, spliced back at the words' cores.

A "word" is a maximal run of non-whitespace; its *core* is the word without leading/trailing
punctuation ("terms." -> "terms"); a word with an empty core (a lone "-" or "...") is never
chosen, nor a word beyond the masked LM's first window. Each chosen core (however many word
pieces it spans) becomes one mask token, all masks of a row are predicted in one forward pass,
and each is filled from the `top_k` most likely allowed whole-word tokens with the row's
pre-drawn uniforms. :func:`distinct_variants` draws such rows in rounds until each text has enough
distinct variants. Used by :func:`mimirlib.samplers.perturb.substitute_words` (RaMIA's Hamming
ranges), :func:`mimirlib.samplers.neighbors.generate_neighbors` (``unit="word"``) and
:func:`mimirlib.samplers.ranges.fill_masked_words` (RaMIA's redaction).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from mimirlib.samplers.mlm.inputs import check_texts
from mimirlib.samplers.mlm.sampling import (
    eval_mode,
    masked_logits,
    salted_rng,
    sample_candidates,
    sample_ids,
    splice,
    window_limit,
)
from mimirlib.samplers.mlm.vocab import Vocab, is_punctuation, vocab_info

__all__ = [
    "MaskedLMSetup",
    "masked_lm_setup",
    "word_cores",
    "ids_by_casefold",
    "fill_batch",
    "fill_rows",
    "distinct_variants",
]

_WORD = re.compile(r"\S+")


def word_cores(text: str, limit: int) -> list[tuple[int, int]]:
    """Character spans of the cores of the words that end before `limit` (see the module doc)."""
    spans = []
    for m in _WORD.finditer(text):
        s, e = m.span()
        while s < e and is_punctuation(text[s]):
            s += 1
        while e > s and is_punctuation(text[e - 1]):
            e -= 1
        if s < e <= limit:
            spans.append((s, e))
    return spans


def _fill_ids(vocab: Vocab, n_logits: int) -> torch.Tensor:
    """Ids that may fill a masked word: whole-word, non-special, no punctuation (bool [V])."""
    if vocab.wordpiece:  # class 0 = word start without punctuation
        allowed = vocab.allowed[0].clone()
    else:  # other schemes: tokens starting a word (leading space) with a letter or digit
        allowed = vocab.allowed[3] | vocab.allowed[4]
    for i in allowed.nonzero().squeeze(1).tolist():
        c = vocab.core[i]
        if any(is_punctuation(ch) for ch in c):
            allowed[i] = False
    if not allowed.any():
        raise ValueError("the masked LM's vocabulary has no whole-word token to fill a mask with")
    return allowed[:n_logits]


def _lowercases(tokenizer) -> bool:
    norm = getattr(tokenizer.backend_tokenizer, "normalizer", None)
    return norm is not None and norm.normalize_str("Ab") == "ab"


@dataclass(frozen=True, eq=False)
class MaskedLMSetup:
    """What a whole-word sampler needs before filling, computed once per call.

    `cores[i]`: the word-core spans of `texts[i]` that may be masked (a caller may narrow them
    with ``dataclasses.replace``, as it may `fill_ok`); `fill_ok`: bool [V], the ids a mask may
    be filled with; `capitalise`: the tokenizer lowercases, so fills get the original's capital;
    `window`: the masked LM's input length in tokens.
    """

    texts: Sequence[str]
    mask_id: int
    mask_token: str
    vocab: Vocab
    fill_ok: torch.Tensor
    capitalise: bool
    window: int
    cores: Sequence[Sequence[tuple[int, int]]]


def masked_lm_setup(texts: Sequence[str], model, tokenizer, max_length: int, who: str) -> MaskedLMSetup | None:
    """The checks (errors name `who`, the calling sampler, or the index of the bad text) and the
    :class:`MaskedLMSetup` for `texts`; None for an empty list of texts (after the checks)."""
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError(f"{who} needs a fast tokenizer (character offsets)")
    mask_id, mask_tok = tokenizer.mask_token_id, tokenizer.mask_token
    if mask_id is None:
        raise ValueError("the masked LM's tokenizer has no mask token")
    check_texts(texts)
    if not texts:
        return None
    n_logits = model.get_output_embeddings().weight.shape[0]
    vocab = vocab_info(tokenizer, n_logits)
    window = window_limit(model, tokenizer, max_length)
    enc = tokenizer(
        list(texts), truncation=True, max_length=window, return_offsets_mapping=True, return_special_tokens_mask=True
    )
    cores = []
    for i, text in enumerate(texts):
        offs = [o for o, sp in zip(enc["offset_mapping"][i], enc["special_tokens_mask"][i]) if not sp]
        cores.append(word_cores(text, max((e for _, e in offs), default=0)))
    return MaskedLMSetup(
        texts=texts,
        mask_id=mask_id,
        mask_token=mask_tok,
        vocab=vocab,
        fill_ok=_fill_ids(vocab, n_logits),
        capitalise=_lowercases(tokenizer),
        window=window,
        cores=cores,
    )


def ids_by_casefold(setup: MaskedLMSetup) -> dict[str, list[int]]:
    """The fillable ids grouped by their text, casefolded: pass as `exclude` so that a word is
    never refilled with itself ("The" excludes "the" and "THE")."""
    by_fold: dict[str, list[int]] = {}
    for i in setup.fill_ok.nonzero().squeeze(1).tolist():
        by_fold.setdefault(setup.vocab.core[i].casefold(), []).append(i)
    return by_fold


def mask_ranges(spans, mask_len: int) -> list[tuple[int, int]]:
    """Where the masks stand in ``splice(text, spans, [mask] * len(spans))``: one (start, end) per span."""
    out, shift = [], 0
    for s, e in spans:
        out.append((s + shift, s + shift + mask_len))
        shift += mask_len - (e - s)
    return out


def ours(is_mask: torch.Tensor, offsets: torch.Tensor, inserted: list[list[tuple[int, int]]]):
    """(row, column) of the mask tokens that stand where masks were inserted (:func:`mask_ranges`): a
    text may hold the mask token's own string (a BERT docstring's "Paris is the [MASK] of France")."""
    rows, cols = [], []
    for r, c in zip(*is_mask.nonzero(as_tuple=True)):
        a, b = offsets[r, c].tolist()
        if any(a < e and s < b for s, e in inserted[int(r)]):
            rows.append(int(r))
            cols.append(int(c))
    return torch.tensor(rows, dtype=torch.long), torch.tensor(cols, dtype=torch.long)


def fill_batch(
    setup: MaskedLMSetup,
    chunk,
    model,
    tokenizer,
    *,
    exclude: dict[str, list[int]] | None = None,
    top_k: int | None = 20,
    device=None,
) -> list[list[str]]:
    """One forward pass: the fills (strings) for each row's masked words, in text order.

    A row is ``(i, pos, uniforms)``: text index, ascending indices into ``setup.cores[i]``, and
    one uniform per masked word. `exclude` maps a casefolded original word to ids it may not be
    filled with (:func:`ids_by_casefold`); `top_k` keeps only the most likely allowed ids.
    """
    masked, originals, inserted = [], [], []
    for i, pos, _ in chunk:
        text = setup.texts[i]
        spans = [setup.cores[i][w] for w in pos.tolist()]
        masked.append(splice(text, spans, [setup.mask_token] * len(spans)))
        originals += [text[s:e].casefold() for s, e in spans]
        inserted.append(mask_ranges(spans, len(setup.mask_token)))
    enc = tokenizer(
        masked, truncation=True, max_length=setup.window, padding=True, return_tensors="pt", return_offsets_mapping=True
    )
    ids, att = enc["input_ids"], enc["attention_mask"]
    rr, cc = ours(ids == setup.mask_id, enc["offset_mapping"], inserted)
    counts = torch.bincount(rr, minlength=len(chunk)).tolist()
    for (i, pos, _), c in zip(chunk, counts):
        if c != len(pos):
            raise RuntimeError(f"texts[{i}]: expected {len(pos)} mask tokens after tokenization, found {c}")
    if device is None:
        device = next(model.parameters()).device
    with torch.inference_mode():
        logits = masked_logits(model, ids.to(device), att.to(device), rr.to(device), cc.to(device))
    logits = logits.float().cpu()
    allowed = setup.fill_ok.unsqueeze(0).repeat(len(rr), 1)
    for r, orig in enumerate(originals):
        allowed[r, (exclude or {}).get(orig, [])] = False
    uniforms = torch.from_numpy(np.concatenate([u for _, _, u in chunk]))
    if top_k is not None and top_k < allowed.shape[1]:
        top = logits.masked_fill(~allowed, float("-inf")).topk(top_k, dim=-1).indices
        sampled = sample_candidates(logits, top, allowed.gather(1, top), uniforms).tolist()
    else:
        sampled = sample_ids(logits, allowed, uniforms).tolist()
    out, at = [], 0
    for _, pos, _ in chunk:
        out.append([setup.vocab.core[t] for t in sampled[at : at + len(pos)]])
        at += len(pos)
    return out


def fill_rows(
    setup: MaskedLMSetup,
    rows,
    model,
    tokenizer,
    *,
    exclude: dict[str, list[int]] | None = None,
    top_k: int | None = 20,
    batch_size: int = 32,
    bar=None,
) -> list[str]:
    """Each row's text with its masked words refilled (see :func:`fill_batch` for a row), in row
    order, `batch_size` rows per forward pass; `bar` (if given) advances once per pass. Call it
    with the model in eval mode (:func:`mimirlib.samplers.mlm.sampling.eval_mode`)."""
    device = next(model.parameters()).device
    out = []
    for b in range(0, len(rows), batch_size):
        chunk = rows[b : b + batch_size]
        fills = fill_batch(setup, chunk, model, tokenizer, exclude=exclude, top_k=top_k, device=device)
        for (i, pos, _), words in zip(chunk, fills):
            spans = [setup.cores[i][w] for w in pos.tolist()]
            out.append(splice(setup.texts[i], spans, words, capitalise=setup.capitalise))
        if bar is not None:
            bar.update(1)
    return out


def distinct_variants(
    setup: MaskedLMSetup,
    ks: Sequence[int],
    n_samples: int,
    model,
    tokenizer,
    *,
    seed: int,
    salt: str,
    top_k: int | None,
    batch_size: int,
    max_rounds: int,
    bar=None,
) -> list[list[str]]:
    """`n_samples` distinct variants of each text of `setup`, ``ks[i]`` of its words refilled in
    each (``1 <= ks[i] <= len(setup.cores[i])``, checked by the caller): rows are drawn in rounds
    from a generator per text (:func:`salted_rng` of the text, `seed`, `salt` and ``ks[i]``) until
    each text has `n_samples` distinct variants, kept in the order found. A text still short after
    `max_rounds` rounds raises a ValueError naming its index."""
    texts = setup.texts
    rngs = [salted_rng(t, seed, salt, k) for t, k in zip(texts, ks)]
    found: list[dict[str, None]] = [{} for _ in texts]  # insertion-ordered sets
    exclude = ids_by_casefold(setup)
    with eval_mode(model):
        for _ in range(max_rounds):
            rows = []  # (text index, sorted word indices, uniforms)
            for i, k in enumerate(ks):
                missing = n_samples - len(found[i])
                for _ in range(missing + max(2, missing // 2) if missing > 0 else 0):
                    pos = np.sort(rngs[i].choice(len(setup.cores[i]), size=k, replace=False))
                    rows.append((i, pos, rngs[i].random(k)))
            if not rows:
                break
            variants = fill_rows(
                setup, rows, model, tokenizer, exclude=exclude, top_k=top_k, batch_size=batch_size, bar=bar
            )
            for (i, _, _), variant in zip(rows, variants):
                if len(found[i]) < n_samples:
                    found[i].setdefault(variant, None)
    for i, f in enumerate(found):
        if len(f) < n_samples:
            raise ValueError(
                f"texts[{i}]: only {len(f)} distinct variants at Hamming distance {ks[i]} after {max_rounds} "
                f"rounds, {n_samples} requested (too few words, or raise top_k)"
            )
    return [list(f) for f in found]
