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
  pieces); this module owns the distance, and the rounds that make the variants distinct are
  :func:`mimirlib.samplers.mlm.words.distinct_variants`.
- :func:`replace_random_words`: the same number of whole words replaced by words drawn from a pool
  (:func:`word_pool`, e.g. the member texts' own words), no masked LM: the control of the same
  size against which masked-LM neighbours are judged semantic.

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
from mimirlib.samplers.mlm.sampling import salted_rng, splice
from mimirlib.samplers.mlm.words import distinct_variants, masked_lm_setup, word_cores
from mimirlib.progress import progress_factory

__all__ = [
    "replace_random_tokens",
    "random_token_variants",
    "substitute_words",
    "word_pool",
    "replace_random_words",
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
    ids = tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
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
        ids = tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
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


# --------------------------------------------------------------------------- random words


def word_pool(texts: Sequence[str]) -> list[str]:
    """Every word core of `texts` (:func:`mimirlib.samplers.mlm.words.word_cores`), one entry per
    occurrence: drawing from it uniformly draws words in proportion to their frequency there."""
    return [t[s:e] for t in as_text_list(texts) for s, e in word_cores(t, len(t))]


def replace_random_words(text: str, k: int, pool: Sequence[str], rng) -> str:
    """`text` with the cores of k random words (the words :func:`substitute_words` may choose,
    anywhere in the text) replaced by words drawn uniformly from `pool` (:func:`word_pool`), never
    one equal to the original core up to case: the masked-LM fills' size without the masked LM.

    Punctuation, whitespace and the other words stay byte-identical, so ``word_hamming(text,
    result) == k`` for a `pool` of words without whitespace. ValueError when the text has fewer
    than k such words or `pool` offers no word different from one that must change.
    """
    rng = _as_generator(rng)
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
        raise ValueError(f"k must be an integer >= 0, got {k!r}")
    spans = word_cores(text, len(text))
    if k > len(spans):
        raise ValueError(f"cannot replace {k} words: the text has only {len(spans)} replaceable word(s)")
    pool = list(pool)
    if k and not pool:
        raise ValueError("the word pool is empty")
    chosen = [spans[w] for w in np.sort(rng.choice(len(spans), size=k, replace=False)).tolist()]
    fills = []
    for s, e in chosen:
        old = text[s:e].casefold()
        for _ in range(100):  # uniform over the pool's words other than the original
            new = pool[rng.integers(len(pool))]
            if new.casefold() != old:
                break
        else:  # the pool is (nearly) all this word: draw among the others directly
            others = [w for w in pool if w.casefold() != old]
            if not others:
                raise ValueError(f"the word pool has no word other than {text[s:e]!r} to replace it with")
            new = others[rng.integers(len(others))]
        fills.append(new)
    return splice(text, chosen, fills)


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
    for i, spans in enumerate(setup.cores):
        if len(spans) < k:
            raise ValueError(f"texts[{i}] has {len(spans)} word(s) the masked LM can replace, fewer than k={k}")
    bar = progress_factory(progress)(total=None, desc=f"word substitution (k={k})")
    try:
        return distinct_variants(
            setup,
            [int(k)] * len(texts),
            n_samples,
            mlm_model,
            mlm_tokenizer,
            seed=seed,
            salt="substitute-words",
            top_k=top_k,
            batch_size=batch_size,
            max_rounds=max_rounds,
            bar=bar,
        )
    finally:
        bar.close()
