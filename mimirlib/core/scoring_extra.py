"""Scoring with the attacks published after the paper (:data:`mimirlib.core.attacks.AFTER_PAPER`): their
extra signals (:mod:`mimirlib.core.extra_signals`) joined with the attacks, as :mod:`mimirlib.core.scoring`
joins the plain pass with the paper's attacks.

What each needs besides the target model: ReCaLL a few texts known to be non-members and disjoint
from every scored text (``prefix_texts``); DC-PDD a corpus to count token frequencies in
(``frequency_corpus``); the gradient norm nothing, but a backward pass per text (``grad_params``
picks the weights). :func:`score_extra` returns the scores and, per attack, what computing its
inputs cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping, Sequence

import pandas as pd

from mimirlib.core.attacks import AttackInputs, get_attack, needs_extra, score
from mimirlib.core.extra_signals import gradient_norms, recall_signals, scored_token_ids, token_frequencies
from mimirlib.core.signals import ScoringOptions, compute_signals

COST_COLUMNS = ["attack", "texts", "computed", "seconds", "ms_per_text", "what"]
WHAT = {
    "recall": "one forward pass of prefix + text, and one of the text alone, on windows that leave room for the prefix",
    "dc_pdd": "no pass: a tokenization, the cached plain pass and a token-frequency table (cached)",
    "grad_norm": "one forward and one backward pass per text (batch of one)",
}


@dataclass
class ExtraScores:
    """``scores``: one row per text, one column per attack; ``costs``: one row per attack (texts,
    texts computed rather than read from the cache, seconds, ms per computed text, what it runs)."""

    scores: pd.DataFrame
    costs: pd.DataFrame


def missing_input(name: str, *, prefix_texts=None, frequency_corpus=None) -> str | None:
    """Why attack ``name`` cannot run with what is given (None when it can)."""
    needs = get_attack(name).needs
    if "prefixed" in needs and not prefix_texts:
        return "needs prefix texts known to be non-members (a reference pool or a file)"
    if "token_freq" in needs and not frequency_corpus:
        return "needs a corpus to count token frequencies in (a reference pool or a file)"
    return None


def score_extra(
    texts: Sequence[str],
    target,
    attacks: Sequence[str],
    *,
    prefix_texts: Sequence[str] | None = None,
    frequency_corpus: Sequence[str] | None = None,
    grad_params: str | None = None,
    prefix_tokens: int | None = None,
    attack_params: Mapping[str, dict] | None = None,
    options: ScoringOptions | None = None,
    desc: str = "texts",
) -> ExtraScores:
    """Scores of ``texts`` under ``target`` (a :class:`mimirlib.core.models.LoadedModel`) for each of
    ``attacks``, every one an attack after the paper. Raises ValueError naming an attack that is not
    one, or whose input is missing, before any pass; :class:`mimirlib.core.extra_signals.PrefixLeak` when a
    prefix text is also a text to score. ReCaLL's window is ``window`` in all (prefix + text)."""
    texts = list(texts)
    for name in attacks:
        if not needs_extra(name):
            raise ValueError(f"attack {name!r} is one of the paper's; score it with mimirlib.core.scoring")
        why = missing_input(name, prefix_texts=prefix_texts, frequency_corpus=frequency_corpus)
        if why:
            raise ValueError(f"attack {name!r} {why}")
    params = dict(attack_params or {})
    opts = options or ScoringOptions()
    cache, window, stride, batch_size = opts.cache, opts.window, opts.stride, opts.batch_size
    target_sigs = compute_signals(target, texts, desc=f"{desc} target", **opts.signal_kwargs())
    out, costs = pd.DataFrame(index=range(len(texts))), []
    for name in attacks:
        needs = get_attack(name).needs
        fields = [dict() for _ in texts]
        t0 = time.perf_counter()
        computed = len(texts)
        if "prefixed" in needs:
            r = recall_signals(
                target,
                texts,
                prefix_texts,
                cache=cache,
                window=window,
                prefix_tokens=prefix_tokens,
                batch_size=batch_size,
                desc=f"{desc} recall",
            )
            for f, a, b in zip(fields, r.prefixed, r.unprefixed):
                f.update(prefixed=a, unprefixed=b)
            computed = r.computed
        if "token_freq" in needs:
            freq = token_frequencies(target.tokenizer, frequency_corpus, cache=cache)
            for f, ids in zip(fields, scored_token_ids(target, texts)):
                f.update(token_ids=ids, token_freq=freq)
        if "grad_norm" in needs:
            g = gradient_norms(target, texts, cache=cache, window=window, stride=stride, params=grad_params, desc=desc)
            for f, v in zip(fields, g.norms):
                f["grad_norm"] = v
            computed = g.computed
        seconds = time.perf_counter() - t0
        inputs = [AttackInputs(t, s, **f) for t, s, f in zip(texts, target_sigs, fields)]
        out[name] = score(name, inputs, **params.get(name, {}))
        costs.append(
            {
                "attack": name,
                "texts": len(texts),
                "computed": computed,
                "seconds": seconds,
                "ms_per_text": 1000 * seconds / computed if computed else float("nan"),
                "what": WHAT.get(name, ""),
            }
        )
    return ExtraScores(out, pd.DataFrame(costs, columns=COST_COLUMNS))
