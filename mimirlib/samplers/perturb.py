"""Modified members (MIMIR section 5) and RaMIA's word-level Hamming range sampler.

Two ways to move a text a known distance away from itself:

- :func:`replace_random_tokens` (MIMIR section 5, "lexical distance"): n token positions of
  the *target's* tokenization get tokens drawn uniformly from its vocabulary (special tokens
  excluded, and never the token already there, so exactly n ids change); the ids are decoded
  back to a string. MIMIR uses n = 1, 10, 25 with 20 trials per n
  (:func:`random_token_variants`). Decoding a byte-level BPE id sequence can give a string
  that re-tokenizes differently, so the distance is exact on the ids, not on a re-encoding.
- :func:`substitute_words` (RaMIA V-A4, "sampling within ranges"): k whitespace words are
  masked and refilled by a masked LM, so every variant sits at word-level Hamming distance
  *exactly* k from the original (:func:`word_hamming`). Its masking and filling are
  :mod:`mimirlib.samplers.mlm.words` (whole words, where the neighbourhood attack swaps 5% of the word
  pieces); this module owns the distance and the rounds that make the variants distinct.

Word-substitution variant, precisely: a "word" is a maximal run of non-whitespace; its *core*
is the word without leading/trailing punctuation ("terms." -> "terms"). A word with an empty
core (a lone "-" or "...") is never chosen. For each variant, k eligible words are drawn
without replacement; each core is replaced by one mask token (a core of several word pieces
becomes one mask), all k masks are predicted in one forward pass, and each is filled by
sampling from the MLM's distribution restricted to its ``top_k`` most likely whole-word tokens,
excluding the original core (compared case-insensitively), special tokens, continuation pieces
and punctuation. The fill is spliced in at the core's character span, so punctuation,
whitespace, newlines and the text beyond the MLM window stay byte-identical, and the variant
splits into the same number of words. With an uncased MLM (``bert-base-uncased``) a fill keeps
the original word's initial capital. Only words inside the MLM's first window are chosen.

Determinism: results depend on (text, seed, k or n, parameters, model) only, not on a text's
position in the list or on batching (per-text generators, pre-drawn uniforms).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from mimirlib.samplers.mlm.inputs import as_text_list
from mimirlib.samplers.mlm.sampling import eval_mode, salted_rng
from mimirlib.samplers.mlm.words import fill_rows, ids_by_casefold, masked_lm_setup
from mimirlib.progress import progress_factory

__all__ = [
    "replace_random_tokens",
    "random_token_variants",
    "substitute_words",
    "word_hamming",
    "within_hamming",
]


def _as_generator(rng) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError(f"rng must be a numpy Generator or an int seed, not {type(rng).__name__}")


# --------------------------------------------------------------------------- random tokens


def _candidate_ids(tokenizer) -> np.ndarray:
    """Every id of the tokenizer's vocabulary except its special tokens."""
    special = set(tokenizer.all_special_ids)
    ids = np.array([i for i in range(len(tokenizer)) if i not in special], dtype=np.int64)
    if len(ids) < 2:
        raise ValueError("the tokenizer's vocabulary has fewer than 2 non-special tokens to draw from")
    return ids


def _replace_ids(
    ids: Sequence[int], n: int, candidates: np.ndarray, rng: np.random.Generator, max_tokens: int | None = None
) -> tuple[list[int], np.ndarray]:
    """`ids` with n distinct positions (among the first `max_tokens`) set to a different
    candidate id drawn uniformly; returns (new ids, sorted positions)."""
    ids = list(ids)
    reach = len(ids) if max_tokens is None else min(len(ids), max_tokens)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    if n > reach:
        raise ValueError(f"cannot replace {n} tokens: the text has only {reach} replaceable token(s)")
    pos = np.sort(rng.choice(reach, size=n, replace=False)) if n else np.zeros(0, dtype=np.int64)
    for p in pos.tolist():
        while True:  # uniform over the candidates other than the token already there
            new = int(candidates[rng.integers(len(candidates))])
            if new != ids[p]:
                break
        ids[p] = new
    return ids, pos


def replace_random_tokens(text: str, tokenizer, n: int, rng, *, max_tokens: int | None = None) -> str:
    """`text` with n random token positions (of `tokenizer`'s encoding, no special tokens added)
    replaced by tokens drawn uniformly from the vocabulary minus special tokens, decoded.

    Exactly n ids differ from the original's (a replacement never equals the token it
    replaces). `rng` is a numpy Generator (or an int seed). `max_tokens` restricts the
    positions to the first tokens, e.g. the target's truncation length, so every edit is seen.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    new_ids, _ = _replace_ids(ids, n, _candidate_ids(tokenizer), _as_generator(rng), max_tokens)
    return tokenizer.decode(new_ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def random_token_variants(
    texts: Sequence[str], tokenizer, n: int, *, n_trials: int = 20, seed: int = 0, max_tokens: int | None = None
) -> list[list[str]]:
    """`n_trials` modified members per text, each with n random token replacements (MIMIR:
    n in {1, 10, 25}, 20 trials). Per-text generators: a text's variants depend on (text, n,
    seed) only."""
    texts = as_text_list(texts)
    if not isinstance(n_trials, int) or n_trials < 1:
        raise ValueError(f"n_trials must be an integer >= 1, got {n_trials!r}")
    candidates = _candidate_ids(tokenizer)
    out = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}, not str")
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        rng = salted_rng(text, seed, "random-tokens", n)
        row = []
        for _ in range(n_trials):
            try:
                new_ids, _ = _replace_ids(ids, n, candidates, rng, max_tokens)
            except ValueError as exc:
                raise ValueError(f"texts[{i}]: {exc}") from None
            row.append(tokenizer.decode(new_ids, skip_special_tokens=False, clean_up_tokenization_spaces=False))
        out.append(row)
    return out


# --------------------------------------------------------------------------- Hamming distance


def word_hamming(a: str, b: str) -> int:
    """Word-level Hamming distance: positions where the whitespace-split words differ.

    RaMIA's text range function (substitution only) compares texts with the same number of
    words. For texts of different word counts (a decoded random token can add or merge a
    space) the shorter is padded with empty words, so the count is positional mismatches plus
    the length difference; :func:`within_hamming` treats such pairs as outside every range.
    """
    wa, wb = a.split(), b.split()
    return sum(x != y for x, y in zip(wa, wb)) + abs(len(wa) - len(wb))


def words_changed(a: str, b: str) -> float:
    """Fraction of ``a``'s whitespace words that are not matched in ``b`` after aligning the two
    word sequences (difflib): unlike :func:`word_hamming`, an inserted or merged word does not
    shift every later word into a "change". 0.0 for identical texts."""
    from difflib import SequenceMatcher

    wa, wb = a.split(), b.split()
    if not wa:
        return 0.0 if not wb else 1.0
    matched = sum(m.size for m in SequenceMatcher(None, wa, wb, autojunk=False).get_matching_blocks())
    return 1.0 - matched / len(wa)


def within_hamming(a: str, b: str, k: int) -> bool:
    """True iff `b` lies in the Hamming range of size k around `a` (False for other word counts)."""
    wa, wb = a.split(), b.split()
    return len(wa) == len(wb) and sum(x != y for x, y in zip(wa, wb)) <= k


# --------------------------------------------------------------------------- word substitution


def substitute_words(
    texts: Sequence[str],
    mlm_model,
    mlm_tokenizer,
    k: int,
    n_samples: int,
    seed: int = 0,
    *,
    top_k: int | None = 20,
    batch_size: int = 32,
    max_length: int = 512,
    max_rounds: int = 10,
    progress=False,
) -> list[list[str]]:
    """`n_samples` distinct variants of each text at word Hamming distance exactly k, by
    masked-LM word substitution (RaMIA V-A4; the variant is described in the module doc).

    `top_k`: fills are sampled from the MLM's `top_k` most likely allowed words (None: from
    all of them). Variants are drawn in rounds until n_samples distinct ones exist; a text for
    which `max_rounds` rounds do not suffice (too few words, too narrow a `top_k`) raises a
    ValueError naming its index, as does a text with fewer than k eligible words.
    """
    texts = as_text_list(texts)
    for name, value, low in (
        ("k", k, 1),
        ("n_samples", n_samples, 1),
        ("batch_size", batch_size, 1),
        ("max_rounds", max_rounds, 1),
    ):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be None or an integer >= 1, got {top_k!r}")
    setup = masked_lm_setup(texts, mlm_model, mlm_tokenizer, max_length, "substitute_words")
    if setup is None:
        return []
    exclude = ids_by_casefold(setup)
    for i, spans in enumerate(setup.cores):
        if len(spans) < k:
            raise ValueError(f"texts[{i}] has {len(spans)} word(s) the masked LM can replace, fewer than k={k}")

    rngs = [salted_rng(t, seed, "substitute-words", k) for t in texts]
    found: list[dict[str, None]] = [{} for _ in texts]  # insertion-ordered sets
    bar = progress_factory(progress)(total=None, desc=f"word substitution (k={k})")
    try:
        with eval_mode(mlm_model):
            for _ in range(max_rounds):
                rows = []  # (text index, sorted word indices, uniforms)
                for i in range(len(texts)):
                    missing = n_samples - len(found[i])
                    if missing <= 0:
                        continue
                    n_words = len(setup.cores[i])
                    for _ in range(missing + max(2, missing // 2)):
                        pos = np.sort(rngs[i].choice(n_words, size=k, replace=False))
                        rows.append((i, pos, rngs[i].random(k)))
                if not rows:
                    break
                variants = fill_rows(
                    setup, rows, mlm_model, mlm_tokenizer, exclude=exclude, top_k=top_k, batch_size=batch_size, bar=bar
                )
                for (i, _, _), variant in zip(rows, variants):
                    if len(found[i]) < n_samples:
                        found[i].setdefault(variant, None)
    finally:
        bar.close()
    for i, f in enumerate(found):
        if len(f) < n_samples:
            raise ValueError(
                f"texts[{i}]: only {len(f)} distinct variants at Hamming distance {k} after {max_rounds} "
                f"rounds, {n_samples} requested (too few words, or raise top_k)"
            )
    return [list(f) for f in found]
