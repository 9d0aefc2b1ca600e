"""RaMIA's ranges of texts (Tao & Shokri): the range type, sampling a range's members (masked-LM
word substitution, words restored towards the source, redacted words completed), the range game of
Definition 2 with its ground truth, and the draws of repeated sampling.

A *range* is a centre text, a range function and a size: with word-level Hamming distance,
"every text within k word substitutions of the centre". It is IN when it contains at least
one training text. RaMIA scores a range by sampling n points in it, scoring each with a point
attack (higher = more likely member, the project's convention), and aggregating the n scores
of each range with a trimmed average (equation 4, :mod:`mimirlib.core.range_scores`).
"""

from __future__ import annotations

import re
from functools import partial
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Sequence

import numpy as np

__all__ = [
    "Range",
    "score_ranges",
    "range_game",
    "range_labels",
    "mlm_hamming_sampler",
    "label_ranges",
    "subset_indices",
    "fresh_draws",
    "restore_words",
    "has_digit",
    "fill_masked_words",
]


@dataclass
class Range:
    """One range query: centre, range function ("hamming", "semantic", ...), size, samples.

    `label`: True for an IN range (it contains a training text), False for OUT, None unknown.
    `source`: the original text the centre was perturbed from (range game only) and `alpha`
    the centre's distance to it.
    """

    centre: str
    function: str
    size: float
    samples: list[str] = field(default_factory=list)
    label: bool | None = None
    source: str | None = None
    alpha: float | None = None


# --------------------------------------------------------------------------- ranges in practice


def score_ranges(ranges: Sequence[Range], point_scores: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """(n_ranges, n_samples) point scores of every range's samples, one call to `point_scores`
    (texts -> scores, higher = member) on the flattened samples."""
    widths = {len(r.samples) for r in ranges}
    if len(widths) != 1 or 0 in widths:
        raise ValueError(f"every range needs the same, non-zero number of samples, got {sorted(widths)}")
    n = widths.pop()
    flat = [s for r in ranges for s in r.samples]
    scores = np.asarray(point_scores(flat), dtype=np.float64)
    if scores.shape != (len(flat),):
        raise ValueError(f"point_scores returned shape {scores.shape} for {len(flat)} texts")
    return scores.reshape(len(ranges), n)


def range_labels(ranges: Sequence[Range]) -> np.ndarray:
    """Ground-truth IN (True) / OUT (False) of each range, as a bool array."""
    if any(r.label is None for r in ranges):
        raise ValueError("some ranges have no label")
    return np.array([bool(r.label) for r in ranges])


def mlm_hamming_sampler(mlm_model, mlm_tokenizer, **kwargs) -> Callable[[list[str], int, int, int], list[list[str]]]:
    """A sampler `(texts, size, n, seed) -> n texts per text at word Hamming distance size`,
    by masked-LM word substitution (:func:`mimirlib.samplers.perturb.substitute_words`; kwargs go there)."""
    return partial(_mlm_substitute, mlm_model, mlm_tokenizer, kwargs)  # a partial pickles (a kept RaMIA run)


def _mlm_substitute(mlm_model, mlm_tokenizer, kwargs: dict, texts, size, n, seed) -> list[list[str]]:
    from mimirlib.samplers.perturb import substitute_words

    return substitute_words(list(texts), mlm_model, mlm_tokenizer, k=int(size), n_samples=n, seed=seed, **kwargs)


def range_game(
    members: Sequence[str],
    nonmembers: Sequence[str],
    *,
    alpha: int,
    size: int,
    n_samples: int,
    perturb: Callable[[list[str], int, int], list[str]] | None = None,
    sampler: Callable[[list[str], int, int, int], list[list[str]]],
    seed: int = 0,
    function: str = "hamming",
    within: Callable[[str, str, float], bool] | None = None,
) -> list[Range]:
    """RaMIA's range game (Definition 2, setup of V-A4): IN ranges centred on members moved
    `alpha` words away, OUT ranges centred on non-members moved the same way; each range gets
    `n_samples` points at distance `size` from its centre. Members' ranges come first.

    `perturb(texts, alpha, seed) -> one centre per text` (alpha = 0: the text itself);
    `sampler(centres, size, n, seed) -> n samples per centre`; e.g. both from
    :func:`mlm_hamming_sampler` (``perturb = lambda t, a, s: [v[0] for v in sampler(t, a, 1, s)]``).
    Ground truth: a range is IN iff some text of `members` lies within `size` of its centre,
    checked with `within(centre, text, size)` (default: word Hamming,
    :func:`mimirlib.samplers.perturb.within_hamming`); so a member's range with alpha > size is OUT,
    and a non-member's range that happens to reach a member is IN. `members` should be the
    whole training set of interest: texts outside it are not checked.
    """
    from mimirlib.samplers.perturb import within_hamming

    members, nonmembers = list(members), list(nonmembers)
    if not isinstance(alpha, int) or alpha < 0:
        raise ValueError(f"alpha must be an integer >= 0, got {alpha!r}")
    if not isinstance(n_samples, int) or n_samples < 1:
        raise ValueError(f"n_samples must be an integer >= 1, got {n_samples!r}")
    if alpha > 0 and perturb is None:
        raise ValueError("alpha > 0 needs a perturb callable to move the centres")
    within = within_hamming if within is None else within
    sources = members + nonmembers
    centres = list(sources) if alpha == 0 else list(perturb(sources, alpha, seed))
    if len(centres) != len(sources):
        raise ValueError(f"perturb returned {len(centres)} centres for {len(sources)} texts")
    samples = sampler(centres, size, n_samples, seed + 1)
    if len(samples) != len(centres):
        raise ValueError(f"sampler returned {len(samples)} sample lists for {len(centres)} centres")
    # index members by word count: a Hamming range only holds texts of its centre's length
    by_len: dict[int, list[str]] = {}
    for t in members:
        by_len.setdefault(len(t.split()), []).append(t)
    out = []
    for i, (src, centre, s) in enumerate(zip(sources, centres, samples)):
        pool = by_len.get(len(centre.split()), []) if within is within_hamming else members
        s = list(s)
        if len(s) != n_samples:
            raise ValueError(f"sampler returned {len(s)} samples for centre {i}, expected {n_samples}")
        out.append(
            Range(
                centre=centre,
                function=function,
                size=size,
                samples=s,
                label=any(within(centre, t, size) for t in pool),
                source=src,
                alpha=alpha,
            )
        )
    return out


# --------------------------------------------------------------------------- experiment helpers


def label_ranges(
    ranges: Sequence[Range], training_texts: Iterable[str], within: Callable[[str, str, float], bool] | None = None
) -> np.ndarray:
    """Range ground truth from a whole training set: each range's `label` is set to True iff
    some text of `training_texts` lies within `size` of its centre (``within(centre, text,
    size)``, default word Hamming, :func:`mimirlib.samplers.perturb.within_hamming`, checked only
    against texts with the centre's word count). Returns the labels as a bool array.

    :func:`range_game` checks only the members it is given; this re-checks every range
    against everything the model trained on, so an OUT range that reaches a near-duplicate
    of a training text (two MIT licences a few words apart) counts as IN.
    """
    from mimirlib.samplers.perturb import within_hamming

    within = within_hamming if within is None else within
    pool = list(training_texts)
    by_len: dict[int, list[str]] = {}
    for t in pool:
        by_len.setdefault(len(t.split()), []).append(t)
    out = []
    for r in ranges:
        cands = by_len.get(len(r.centre.split()), []) if within is within_hamming else pool
        r.label = any(within(r.centre, t, r.size) for t in cands)
        out.append(r.label)
    return np.array(out, dtype=bool)


def subset_indices(n_ranges: int, n_pool: int, n: int, n_iterations: int, seed: int = 0) -> np.ndarray:
    """Repeated sampling from a pool drawn once: an int array (n_iterations, n_ranges, n) whose
    row [it, r] is a random n-subset (without replacement, ascending) of range(n_pool).
    Index each backbone's (n_ranges, n_pool) scores with ``np.take_along_axis(s, idx[it], 1)``
    so that every backbone sees the same samples in an iteration."""
    for name, v, low in (
        ("n_ranges", n_ranges, 0),
        ("n_pool", n_pool, 1),
        ("n", n, 1),
        ("n_iterations", n_iterations, 1),
    ):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    if n > n_pool:
        raise ValueError(f"cannot draw {n} samples per range from a pool of {n_pool}")
    rng = np.random.default_rng(seed)
    keys = rng.random((n_iterations, n_ranges, n_pool))
    return np.sort(np.argsort(keys, axis=2)[:, :, :n], axis=2)


def fresh_draws(n_ranges: int, n: int, n_iterations: int) -> np.ndarray:
    """Repeated sampling with a fresh draw each time: an int array (n_iterations, n_ranges, n) whose
    row [it, r] is it*n ... (it+1)*n - 1, the it-th block of n samples of a pool of n * n_iterations
    drawn independently per range. Disjoint blocks of independent draws are independent draws, so
    the spread over iterations is the sampling spread (subsets of one pool share samples and
    understate it). Index (n_ranges, n * n_iterations) scores with ``np.take_along_axis``."""
    for name, v, low in (("n_ranges", n_ranges, 0), ("n", n, 1), ("n_iterations", n_iterations, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    blocks = np.arange(n_iterations * n).reshape(n_iterations, 1, n)
    return np.repeat(blocks, n_ranges, axis=1)


def _words(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    spans = [m.span() for m in re.finditer(r"\S+", text)]
    return [text[a:b] for a, b in spans], spans


def restore_words(
    source: str, sample: str, p: float, *, seed: int = 0, centre: str | None = None, size: int | None = None
) -> str:
    """A stand-in for a stronger masked LM: `sample` with each word that differs from `source`
    (the text the range was built around: the centre's alpha changes and the sample's own) put
    back to the source's word with probability p. p = 0 is `sample`, p = 1 is `source` (when their
    whitespace agrees, as the substitution samplers guarantee), and the expected distance to the
    source shrinks linearly in p: (1 - p) times the sample's.

    Each differing word draws one key from a generator seeded by (source, sample, seed), and is
    put back iff its key < p: the same sample restored at a larger p is a superset. With `centre`
    and `size`, a restoration that moves the sample away from the centre (a word the centre had
    changed and the sample kept) is undone, largest key first, while the sample would lie more
    than `size` words from the centre: the result stays in its range. Whitespace and every
    other byte come from `sample`; a sample with another word count than `source` is returned as is.
    """
    from mimirlib.samplers.mlm.sampling import salted_rng

    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    src, _ = _words(source)
    words, spans = _words(sample)
    if len(src) != len(words):
        return sample
    diff = [i for i, (a, b) in enumerate(zip(src, words)) if a != b]
    keys = salted_rng(source + "\x00" + sample, seed, "restore-words", len(diff)).random(len(diff))
    put_back = {i: k for i, k in zip(diff, keys) if k < p}
    if centre is not None and size is not None:
        cen, _ = _words(centre)
        if len(cen) == len(src):
            dist = sum((src[i] if i in put_back else w) != c for i, (w, c) in enumerate(zip(words, cen)))
            away = sorted((k, i) for i, k in put_back.items() if words[i] == cen[i])
            while dist > size and away:
                _, i = away.pop()
                del put_back[i]
                dist -= 1
    out, last = [], 0
    for i, (a, b) in enumerate(spans):
        out += [sample[last:a], src[i] if i in put_back else words[i]]
        last = b
    return "".join(out) + sample[last:]


def has_digit(word: str) -> bool:
    """True iff the string contains a decimal digit (the numbers that section V-H's analogue redacts)."""
    return any(ch.isdigit() for ch in word)


def fill_masked_words(
    texts: Sequence[str],
    mlm_model,
    mlm_tokenizer,
    *,
    select: Callable[[str], bool],
    n_candidates: int,
    seed: int = 0,
    fill: Callable[[str], bool] | None = None,
    top_k: int | None = 20,
    batch_size: int = 32,
    max_length: int = 512,
    progress=False,
) -> list[list[str]]:
    """Redacted text and its completions (RaMIA V-H): every word whose core satisfies `select`
    (e.g. :func:`has_digit`) is masked, and the masked LM fills all of them in one forward
    pass per candidate; `n_candidates` candidates per text (not necessarily distinct).

    Words, cores and splicing are those of :mod:`mimirlib.samplers.mlm.words`, as in
    :func:`mimirlib.samplers.perturb.substitute_words`: only the selected words' cores change, everything
    else stays byte-identical, and only words inside the MLM's first window are redacted. Unlike
    the substitution sampler, a fill may equal the original word (the attacker does not know it).
    `fill`: if given, fills are restricted to vocabulary words it accepts (``fill=has_digit``:
    numbers are completed with numbers). A text with no selected word gets `n_candidates`
    copies of itself. Deterministic in (text, seed, n_candidates, parameters, model).
    """
    import torch

    from mimirlib.samplers.mlm.inputs import as_text_list
    from mimirlib.samplers.mlm.sampling import eval_mode, salted_rng
    from mimirlib.samplers.mlm.words import fill_rows, masked_lm_setup
    from mimirlib.progress import progress_factory

    texts = as_text_list(texts)
    for name, value in (("n_candidates", n_candidates), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    setup = masked_lm_setup(texts, mlm_model, mlm_tokenizer, max_length, "fill_masked_words")
    if setup is None:
        return []
    fill_ok = setup.fill_ok
    if fill is not None:
        fill_ok = fill_ok.clone()
        for i in fill_ok.nonzero().squeeze(1).tolist():
            if not fill(setup.vocab.core[i]):
                fill_ok[i] = False
        if not fill_ok.any():
            raise ValueError("no word of the masked LM's vocabulary passes `fill`")
    cores = [[(s, e) for s, e in spans if select(text[s:e])] for text, spans in zip(texts, setup.cores)]
    setup = replace(setup, fill_ok=fill_ok, cores=cores)
    rows = []
    for i, text in enumerate(texts):
        if not cores[i]:
            continue
        rng = salted_rng(text, seed, "fill-masked-words", n_candidates)
        pos = np.arange(len(cores[i]))
        rows += [(i, pos, rng.random(len(pos))) for _ in range(n_candidates)]
    out: list[list[str]] = [[] if cores[i] else [t] * n_candidates for i, t in enumerate(texts)]
    bar = progress_factory(progress)(total=None, desc="masked-word fill")
    try:
        with eval_mode(mlm_model), torch.inference_mode():
            variants = fill_rows(setup, rows, mlm_model, mlm_tokenizer, top_k=top_k, batch_size=batch_size, bar=bar)
    finally:
        bar.close()
    for (i, _, _), variant in zip(rows, variants):
        out[i].append(variant)
    return out
