"""Modified members (MIMIR §5, Tables 4/10, Figures 5/11): members edited by random tokens, masked-LM
neighbours or paraphrases, scored at thresholds set on the original benchmark's non-members.

The chapter calls :func:`run` (the original benchmark and the modified members scored, how close
they stay to their originals, Table 4's rates and the neighbours-vs-edits effect) and
:func:`verdicts`; what it shows comes from :func:`distribution_figure` (Figures 5 and 11's
analogue), :func:`mimirlib.experiments.modified_members_rates.table4` (Table 4's cells with an
interval for every rate), :func:`similarity_summary`, :func:`paraphrase_samples` (what the offline
instruct model wrote, to be read) and :func:`prose_numbers` (what the prose states).

Paraphrases (MIMIR appendix D, Table 10) come from SmolLM2-135M-Instruct
(:mod:`mimirlib.samplers.paraphrase`: greedy, cached on disk) for the first ``paraphrase_members`` members
of each domain, one each; they join the modified members as the kind :data:`PARAPHRASE`, so the
same thresholds and intervals apply to them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mimirlib.samplers import paraphrase, perturb
from mimirlib.display import plots, report
from mimirlib.display.report import count_of, count_span
from mimirlib.core.data import Benchmark
from mimirlib.core.scoring import score_benchmark, score_texts
from mimirlib.core.signals import ScoringOptions, SignalCache
from mimirlib.verdicts import Verdict
from mimirlib.verdicts import modified_members as rules
from mimirlib.verdicts import regime as fidelity
from mimirlib.verdicts.regime import Regime
from mimirlib.experiments.modified_members_rates import flag_rates, percent_text
from mimirlib.experiments.neighbour_quality import CONTROL_COSINE, add_control_cosines
from mimirlib.experiments.params import Params
from mimirlib.experiments.suite import resolve_suite

SEMANTIC = "semantic (masked LM)"  # the kind of the benchmark's masked-LM neighbours
PARAPHRASE = "paraphrase (SmolLM2-135M)"  # the kind of the offline instruct model's paraphrases


def lexical_kind(n: int) -> str:
    """The kind label of members with ``n`` random tokens replaced."""
    return f"lexical n={n}"


def lexical_kinds(kinds) -> list:
    """The random-token kinds among ``kinds`` (neither neighbours nor paraphrases), in order."""
    return [k for k in kinds if k.startswith("lexical")]


@dataclass
class ModifiedRun:
    """What the chapter scored.

    ``original``: one row per text of the original benchmark (all domains pooled): ``domain``,
    ``position`` (index among its domain's members or non-members), ``is_member``, ``text`` and one
    column per attack score. ``modified``: one row per modified member: ``domain``, ``member``
    (the member's position), ``original`` (its text), ``kind``, ``edits`` (random tokens
    replaced; NaN for neighbours and paraphrases), ``trial``, ``text`` and the same score columns.
    ``columns`` maps a display name (``loss``, ``ref``) to its score column. ``paraphrased``: the
    :class:`mimirlib.samplers.paraphrase.ParaphraseRun` behind the paraphrases (None without any).
    :func:`run` adds the rates, the closeness effects and the target model."""

    original: pd.DataFrame
    modified: pd.DataFrame
    columns: dict
    kinds: list
    target_label: str
    members_per_domain: int
    trials: int
    cache_hits: int = 0
    cache_misses: int = 0
    paraphrased: object = None
    rates: pd.DataFrame | None = None  # Table 4's cells (:func:`flag_rates`), set by :func:`run`
    closeness: pd.DataFrame | None = None  # neighbours vs edits (:func:`closeness_effects`), set by :func:`run`
    target: object = None  # the scored target model (:class:`mimirlib.core.models.LoadedModel`), set by :func:`run`
    unscorable: tuple = ()  # paraphrase replies too short to score (fewer than 2 tokens), left out of ``modified``

    @property
    def domains(self) -> list:
        return list(dict.fromkeys(self.original.domain))

    def scores(self, attack: str, is_member: int) -> np.ndarray:
        o = self.original
        return o.loc[o.is_member == is_member, self.columns[attack]].to_numpy(float)

    def modified_of(self, kind: str) -> pd.DataFrame:
        return self.modified[self.modified.kind == kind]

    def describe(self) -> str:
        counts = ", ".join(f"{k}: {(self.modified.kind == k).sum()}" for k in self.kinds)
        s = (
            f"{len(self.modified)} modified members ({counts}) of {self.n_edited_members()} members; signal "
            f"cache: {self.cache_hits} texts read from disk, {self.cache_misses} computed"
        )
        return s + (f"\nparaphrases: {self.paraphrased.describe()}" if self.paraphrased is not None else "")

    def n_edited_members(self, kind: str | None = None) -> int:
        m = self.modified if kind is None else self.modified_of(kind)
        return int(m[["domain", "member"]].drop_duplicates().shape[0])


def modify_members(
    benches: Mapping[str, Benchmark],
    tokenizer,
    *,
    edits: Sequence[int],
    trials: int,
    members_per_domain: int,
    neighbors_per_member: int | None = None,
    seed: int = 0,
    max_tokens: int | None = None,
) -> pd.DataFrame:
    """The modified members, one row each: for the first ``members_per_domain`` members of every
    benchmark, ``trials`` copies with n random tokens replaced for each n in ``edits`` (MIMIR: 1,
    10, 25 and 20 trials) and, where the benchmark carries them, its masked-LM neighbours (the
    semantic modification, up to ``neighbors_per_member``). One generator seeded with ``seed``
    draws every replacement, in this order."""
    if trials < 1 or members_per_domain < 1:
        raise ValueError(f"trials and members_per_domain must be >= 1, got {trials} and {members_per_domain}")
    rng = np.random.default_rng(seed)
    rows = []
    for d, b in benches.items():
        for i, text in enumerate(b.members[:members_per_domain]):
            base = {"domain": d, "member": i, "original": text}
            for n in edits:
                for t in range(trials):
                    rows.append(
                        base
                        | {
                            "kind": lexical_kind(n),
                            "edits": n,
                            "trial": t,
                            "text": perturb.replace_random_tokens(text, tokenizer, n, rng, max_tokens=max_tokens),
                        }
                    )
            if b.has_neighbors:
                for t, nb in enumerate(b.member_neighbors[i][:neighbors_per_member]):
                    rows.append(base | {"kind": SEMANTIC, "edits": np.nan, "trial": t, "text": nb})
    return pd.DataFrame(rows, columns=["domain", "member", "original", "kind", "edits", "trial", "text"])


def make_paraphrases(
    benches: Mapping[str, Benchmark],
    generator,
    *,
    members_per_domain: int,
    settings: paraphrase.GenerationSettings,
    cache: paraphrase.ParaphraseCache | None = None,
    chunk: int = 8,
) -> tuple[pd.DataFrame, paraphrase.ParaphraseRun]:
    """One paraphrase of each of the first ``members_per_domain`` members of every benchmark (rows
    shaped like :func:`modify_members`', kind :data:`PARAPHRASE`, trial 0), and the
    :class:`mimirlib.samplers.paraphrase.ParaphraseRun` they came from (cost, cache hits, cut replies).
    ``generator``: see :func:`mimirlib.samplers.paraphrase.paraphrase_texts`."""
    where = [(d, i, t) for d, b in benches.items() for i, t in enumerate(b.members[:members_per_domain])]
    done = paraphrase.paraphrase_texts([t for _, _, t in where], generator, settings, cache=cache, chunk=chunk)
    rows = [
        {"domain": d, "member": i, "original": t, "kind": PARAPHRASE, "edits": np.nan, "trial": 0, "text": p}
        for (d, i, t), p in zip(where, done.paraphrases)
    ]
    return pd.DataFrame(rows, columns=["domain", "member", "original", "kind", "edits", "trial", "text"]), done


def check_paraphrase_params(paraphrase_members, paraphrase_tokens, paraphrase_batch) -> None:
    """Raise a ValueError naming the parameter when a paraphrase setting is not a usable integer
    (checked before any model is loaded)."""
    for name, value, low in (
        ("paraphrase_members", paraphrase_members, 0),
        ("paraphrase_tokens", paraphrase_tokens, 1),
        ("paraphrase_batch", paraphrase_batch, 1),
    ):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def score_original(
    benches: Mapping[str, Benchmark], target, attacks: Sequence[str], references: Mapping, options: ScoringOptions
) -> pd.DataFrame:
    """Every domain's benchmark pooled and scored (members first), with each text's ``domain``,
    ``position`` (among its domain's members or non-members) and ``text``."""
    pooled = Benchmark(
        "pooled",
        tuple(t for b in benches.values() for t in b.members),
        tuple(t for b in benches.values() for t in b.nonmembers),
    )
    orig = score_benchmark(pooled, target, attacks, references=references, options=options)
    where = [(d, i) for d, b in benches.items() for i in range(len(b.members))]
    where += [(d, i) for d, b in benches.items() for i in range(len(b.nonmembers))]
    orig.insert(0, "domain", [d for d, _ in where])
    orig.insert(1, "position", [i for _, i in where])
    orig.insert(3, "text", pooled.texts())
    return orig


def modified_texts(benches: Mapping[str, Benchmark], tokenizer, p: Params, generator=None):
    """The modified members (:func:`modify_members`, then the paraphrases of :func:`make_paraphrases`
    when ``p.paraphrase_members``), the paraphrase run (None without paraphrases) and the replies too
    short to score (fewer than 2 of the target's tokens: lab draw 10's model once answered "1"), left out."""
    mods = modify_members(
        benches,
        tokenizer,
        edits=p.edits,
        trials=p.trials,
        members_per_domain=p.members_per_domain,
        neighbors_per_member=p.neighbors_per_member,
        seed=p.seed,
    )
    paraphrased, unscorable = None, ()
    if p.paraphrase_members:
        settings = paraphrase.GenerationSettings(max_new_tokens=int(p.paraphrase_tokens))
        gen = generator if generator is not None else paraphrase.OfflineGenerator(batch_size=int(p.paraphrase_batch))
        para, paraphrased = make_paraphrases(
            benches, gen, members_per_domain=int(p.paraphrase_members), settings=settings, chunk=int(p.paraphrase_batch)
        )
        ids = tokenizer(list(para.text), add_special_tokens=False, verbose=False)["input_ids"] if len(para) else []
        short = np.array([len(row) < 2 for row in ids], dtype=bool)
        unscorable = tuple(para.text[short])
        mods = pd.concat([mods, para[~short]], ignore_index=True)
    return mods, paraphrased, unscorable


def score_modified_members(p: Params, *, generator=None) -> ModifiedRun:
    """Score the original benchmark (every domain of ``p.split``, pooled) and its modified members
    with the suite's largest target and its first reference (the reference attack's column is
    shown as ``ref``).

    Paraphrases: the first ``p.paraphrase_members`` members of each domain (0: none), one each,
    greedy, at most ``p.paraphrase_tokens`` new tokens, ``p.paraphrase_batch`` texts per generation
    pass; ``generator`` defaults to SmolLM2-135M-Instruct (:class:`mimirlib.samplers.paraphrase.OfflineGenerator`,
    loaded only when some paraphrase is not cached yet)."""
    check_paraphrase_params(p.paraphrase_members, p.paraphrase_tokens, p.paraphrase_batch)
    suite = resolve_suite(
        p.profile,
        draw=p.draw,
        models=p.models,
        reference_models=p.reference_models,
        benchmark_source=p.benchmark_source,
        domains=p.domains,
        revision=p.revision,
        dtype=p.dtype,
    )
    target_name = suite.targets[-1]
    target = suite.model(target_name)
    refs = {label: suite.model(r) for label, r in suite.references.items()}
    cache = SignalCache.default()
    options = p.scoring(cache=cache)
    benches = {d: suite.benchmark(d, p.split) for d in suite.domains}
    orig = score_original(benches, target, p.attacks, refs, options)
    mods, paraphrased, unscorable = modified_texts(benches, target.tokenizer, p, generator)
    mod_scores = score_texts(
        list(mods.text), target, p.attacks, references=refs, options=options, desc="modified members"
    )
    mods = pd.concat([mods, mod_scores], axis=1)
    main_ref = f"ref:{next(iter(refs))}" if refs else None
    columns = {("ref" if c == main_ref else c): c for c in mod_scores.columns if c == "loss" or c == main_ref}
    kinds = list(dict.fromkeys(mods.kind))
    label = suite.label(target_name)
    return ModifiedRun(
        orig,
        mods,
        columns,
        kinds,
        label,
        p.members_per_domain,
        p.trials,
        cache.hits,
        cache.misses,
        paraphrased,
        target=target,
        unscorable=unscorable,
    )


def run(p: Params, *, generator=None) -> ModifiedRun:
    """The chapter's computation: :func:`score_modified_members`, then how close the modified
    members stay to their originals (:func:`add_similarity`, ``p.similarity_trials``; the neighbours'
    size-matched controls drawn with ``p.seed``), Table 4's
    rates at ``p.fpr_targets`` (exact intervals, no resampling) and the neighbours-vs-edits effect
    (``p.n_bootstrap`` resamples seeded with ``p.seed``)."""
    r = score_modified_members(p, generator=generator)
    add_similarity(r, p.similarity_trials, p.seed)
    r.rates = flag_rates(r, p.fpr_targets)
    r.closeness = closeness_effects(r, n_bootstrap=p.n_bootstrap, seed=p.seed)
    return r


def verdicts(run: ModifiedRun) -> list[Verdict]:
    """The chapter's verdicts, in the page's order: lexical edits, masked-LM neighbours, neighbours
    closer than edits, paraphrases (:mod:`mimirlib.verdicts.modified_members`). The two claims about
    semantic neighbours rest on the neighbour row (:func:`regime`): out of regime, they are not tested."""
    rows = regime(run)
    keys = ",".join(r.key for r in rows)
    n_sem, n_closer = sample_size(run, "semantic"), sample_size(run, "closeness")
    semantic = rules.SEMANTIC.out_of_regime(rows, lab_value="-", n=n_sem) or rules.semantic_rule(run.rates, n_sem)
    closer = rules.CLOSER.out_of_regime(rows, lab_value="-", n=n_closer) or rules.closer_rule(run.closeness, n_closer)
    return [
        rules.lexical_rule(run.rates, sample_size(run, "lexical")),
        replace(semantic, regime=keys),
        replace(closer, regime=keys),
        rules.paraphrase_rule(run.rates, run.modified_of(PARAPHRASE), sample_size(run, "paraphrase")),
    ]


def neighbour_cosines(run: ModifiedRun, *, n_bootstrap: int = 1000, seed: int = 0) -> dict | None:
    """The masked-LM neighbours' mean cosine to their member against random-word edits of exactly
    the same size (each neighbour's own control, :mod:`mimirlib.experiments.neighbour_quality`: as
    many whole words of the member replaced by random words of its domain), paired by member (each
    member's mean over its neighbours and over their controls), with a percentile bootstrap over
    members of the mean difference; None without neighbours whose cosines were measured."""
    mods = run.modified
    if not {"cosine", CONTROL_COSINE} <= set(mods.columns):
        return None
    sem = mods[mods.kind == SEMANTIC].dropna(subset=["cosine", CONTROL_COSINE])
    if sem.empty:
        return None
    both = sem.groupby(["domain", "member"])[["cosine", CONTROL_COSINE]].mean()
    d = (both["cosine"] - both[CONTROL_COSINE]).to_numpy()
    boot = np.random.default_rng(seed).choice(d, (n_bootstrap, d.size)).mean(axis=1)
    lo, hi = np.quantile(boot, [0.025, 0.975])
    return {"sem": both["cosine"].mean(), "rnd": both[CONTROL_COSINE].mean(), "lo": lo, "hi": hi, "n": d.size}


def regime(run: ModifiedRun) -> list[Regime]:
    """The chapter's fidelity row: are the masked-LM neighbours semantic (:func:`neighbour_cosines`)?"""
    c = neighbour_cosines(run)
    return [] if c is None else [fidelity.neighbours("masked LM", c["sem"], c["rnd"], c["lo"], c["hi"], c["n"])]


# ----------------------------------------------------------------------------- closeness to the originals


def add_similarity(run: ModifiedRun, similarity_trials: int, seed: int = 0) -> ModifiedRun:
    """Add ``words changed (%)`` (aligned word sequences, every modified member) and, for the first
    ``similarity_trials`` trials of each kind and for every paraphrase (whether the model could
    paraphrase is judged on it), ``cosine`` (MiniLM sentence embedding) to the original to
    ``run.modified``, in place; ``similarity_trials=0`` skips the embeddings of the other kinds.
    Each neighbour with a cosine also gets its size-matched random-word control and that control's
    cosine (:func:`mimirlib.experiments.neighbour_quality.add_control_cosines`, drawn with ``seed``)."""
    mods = run.modified
    mods["words changed (%)"] = [100 * perturb.words_changed(a, b) for a, b in zip(mods.original, mods.text)]
    some = mods[(mods.trial < similarity_trials) | (mods.kind == PARAPHRASE)]
    if len(some):
        from mimirlib.samplers import embeddings

        mods["cosine"] = np.nan
        mods.loc[some.index, "cosine"] = embeddings.cosine_to_original(list(some.original), list(some.text))
    add_control_cosines(mods, run.original, SEMANTIC, seed)
    return run


def similarity_summary(run: ModifiedRun) -> pd.DataFrame:
    """Mean share of words changed, cosine to the original (where measured) and mean score of each
    kind of modified member, beside the original members and non-members."""
    sim = [c for c in ("words changed (%)", "cosine") if c in run.modified.columns]
    names = {c: f"mean {a} score" for a, c in run.columns.items()}
    summary = run.modified.groupby("kind", sort=False)[sim + list(names)].mean().rename(columns=names)
    for label, flag in (("original members", 1), ("non-members", 0)):
        summary.loc[label, list(names.values())] = [run.scores(a, flag).mean() for a in run.columns]
    return summary


def matched_lexical_kind(run: ModifiedRun) -> str | None:
    """The random-token edit count whose mean share of changed words is closest to the masked-LM
    neighbours' (MIMIR's Figure 5 sets n=25 of ~512 tokens beside 5% semantic replacements: edits
    of about the same size); None without neighbours. Needs :func:`add_similarity` first."""
    mods = run.modified
    if SEMANTIC not in run.kinds:
        return None
    share = mods.groupby("kind")["words changed (%)"].mean()
    lex = lexical_kinds(run.kinds)
    return min(lex, key=lambda k: abs(share[k] - share[SEMANTIC])) if lex else None


def closeness_effects(
    run: ModifiedRun, *, n_bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95
) -> pd.DataFrame:
    """Do masked-LM neighbours stay closer to their member's score than random-token edits of about
    the same size (:func:`matched_lexical_kind`)? Per attack, the mean over members of
    ``mean |score - original's score|`` of the edits minus that of the neighbours (positive:
    neighbours closer), with a bootstrap interval over members (paired: both kinds come from the
    same members). Empty without neighbours."""
    lex = matched_lexical_kind(run)
    cols = [
        "attack",
        "estimate",
        "lo",
        "hi",
        "lexical",
        "n_members",
        "n_neighbors",
        "n_edits",
        "words_changed_semantic",
        "words_changed_lexical",
    ]
    if lex is None:
        return pd.DataFrame(columns=cols)
    o = run.original[run.original.is_member == 1].set_index(["domain", "position"])
    mods = run.modified[run.modified.kind.isin([lex, SEMANTIC])]
    rng = np.random.default_rng(seed)
    q = [(1 - confidence) / 2, (1 + confidence) / 2]
    rows = []
    for attack, col in run.columns.items():
        own = o.loc[list(zip(mods.domain, mods.member)), col].to_numpy(float)
        dist = mods.assign(dist=np.abs(mods[col].to_numpy(float) - own))
        per = dist.pivot_table(index=["domain", "member"], columns="kind", values="dist", aggfunc="mean").dropna()
        diff = (per[lex] - per[SEMANTIC]).to_numpy()
        boot = diff[rng.integers(0, diff.size, (n_bootstrap, diff.size))].mean(axis=1)
        lo, hi = np.quantile(boot, q)
        share = mods.groupby("kind")["words changed (%)"].mean()
        rows.append(
            {
                "attack": attack,
                "estimate": float(diff.mean()),
                "lo": float(lo),
                "hi": float(hi),
                "lexical": lex,
                "n_members": int(diff.size),
                "n_neighbors": int((mods.kind == SEMANTIC).sum()),
                "n_edits": int((mods.kind == lex).sum()),
                "words_changed_semantic": float(share[SEMANTIC]),
                "words_changed_lexical": float(share[lex]),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def closeness_table(effects: pd.DataFrame) -> pd.DataFrame:
    """:func:`closeness_effects` as the page shows it: one row per attack, the effect (positive: neighbours
    closer) with its interval over members, the edits it is matched with, and the counts it rests on."""
    if effects.empty:
        return effects
    e = effects.set_index("attack")
    return pd.DataFrame(
        {
            f"edits minus neighbours ({rules.score_units(e.index)})": [
                report.fmt_ci(*v) for v in zip(e.estimate, e.lo, e.hi)
            ],
            "against": e.lexical,
            "members": e.n_members,
            "neighbours / edits": [f"{a} / {b}" for a, b in zip(e.n_neighbors, e.n_edits)],
            "words changed (%), neighbours / edits": [
                f"{a:.1f} / {b:.1f}" for a, b in zip(e.words_changed_semantic, e.words_changed_lexical)
            ],
        },
        index=e.index,
    )


# ----------------------------------------------------------------------------- figure and prose


def distribution_figure(run: ModifiedRun):
    """Figures 5 and 11's analogue: score distributions of members, non-members and modified
    members, one column per attack; top row the largest random-token edit count (the paper's
    n=25), then the masked-LM neighbours, then the paraphrases where the run has them (three
    distributions per panel, as in the paper; each panel titled with its attack and modification,
    each legend entry with its number of texts)."""
    lex = lexical_kinds(run.kinds)
    shown = [max(lex, key=lambda k: run.modified_of(k).edits.iloc[0])] if lex else []
    shown += [k for k in (SEMANTIC, PARAPHRASE) if k in run.kinds]
    fig, axes = plt.subplots(
        len(shown), len(run.columns), figsize=(6.2 * len(run.columns), 4.0 * len(shown)), squeeze=False
    )
    for row, kind in zip(axes, shown):
        if kind == SEMANTIC:
            what = "masked-LM neighbours"
        elif kind == PARAPHRASE:
            what = "paraphrases"
        else:
            what = f"{int(run.modified_of(kind).edits.iloc[0])} random tokens replaced"
        for ax, (attack, col) in zip(row, run.columns.items()):
            groups = {
                "members": run.scores(attack, 1),
                "non-members": run.scores(attack, 0),
                f"modified: {kind}": run.modified_of(kind)[col],
            }
            plots.plot_score_hist(groups, ax=ax, xlabel=plots.score_label(attack), kde=False, count_label="texts")
            ax.set_title(f"{attack}; modified = {what}", fontsize="medium")
    plots.finish(fig)
    plt.close(fig)  # shown where it is glued, not a second time under the cell
    return fig


def paraphrase_samples(run: ModifiedRun, n: int = 3) -> pd.DataFrame:
    """``n`` original/paraphrase pairs to read, the first paraphrased member of each of the first
    ``n`` domains (one per domain: the model's trouble differs between code, licences and prose),
    with their cosine and share of words changed where :func:`add_similarity` measured them.
    Empty without paraphrases."""
    cols = ["domain", "original", "paraphrase", "cosine", "words changed (%)"]
    para = run.modified_of(PARAPHRASE)
    if not len(para):
        return pd.DataFrame(columns=cols)
    first = para.sort_values(["member"], kind="stable").drop_duplicates("domain")
    first = first.set_index("domain").loc[[d for d in run.domains if d in set(first.domain)][:n]].reset_index()
    out = first.rename(columns={"text": "paraphrase"})
    for c in cols:
        if c not in out.columns:
            out[c] = np.nan
    return out[cols].reset_index(drop=True)


def sample_size(run: ModifiedRun, kind: str = "lexical") -> str:
    """The sample size a verdict rests on, in words: members per domain x domains x edit counts x
    trials (``lexical``), x neighbours (``semantic``) or x one paraphrase (``paraphrase``), with
    the non-members and members that set the threshold and the TPR; ``closeness``: the members
    having both neighbours and edits."""
    n_nm = int((run.original.is_member == 0).sum())
    n_m = int((run.original.is_member == 1).sum())
    base = f"; thresholds from {n_nm} non-members, TPR on {n_m} members ({len(run.domains)} domains pooled)"
    lex = lexical_kinds(run.kinds)
    grid = f"{run.members_per_domain} members per domain x {len(run.domains)} domains"
    if kind == "lexical":
        ns = ", ".join(str(int(run.modified_of(k).edits.iloc[0])) for k in lex)
        n_texts = int(run.modified.kind.isin(lex).sum())
        n_members = int(run.modified.loc[run.modified.kind.isin(lex), ["domain", "member"]].drop_duplicates().shape[0])
        return (
            f"{grid} x {len(lex)} edit counts (n = {ns}) x {count_of(run.trials, 'trial')} = {n_texts} edited texts "
            f"from {n_members} members" + base
        )
    if kind == "paraphrase":
        if PARAPHRASE not in run.kinds:
            return "no paraphrases in the run"
        per = run.modified_of(PARAPHRASE).groupby("domain").size()
        short = f" ({len(run.unscorable)} more too short to score, left out)" if run.unscorable else ""
        span = count_span(per, sep="-")
        return (
            f"{count_of(span, 'member')} per domain x {count_of(len(per), 'domain')} x 1 attempt = "
            f"{per.sum()} paraphrase attempts (the model's outputs; the rule says which qualify){short}" + base
        )
    if kind not in ("semantic", "closeness"):
        raise ValueError(f"kind: expected 'lexical', 'semantic', 'paraphrase' or 'closeness', got {kind!r}")
    if SEMANTIC not in run.kinds:
        return "no neighbours in the benchmark"
    sem = run.modified_of(SEMANTIC)
    per = sem.groupby(["domain", "member"]).size()
    span = count_span(per, sep="-")
    s = f"{grid} x {count_of(span, 'neighbour')} = {len(sem)} neighbours of {run.n_edited_members(SEMANTIC)} members"
    if kind == "semantic":
        return s + base
    return s + f", paired with the same members' {count_of(run.trials, 'random-token edit')} per edit count"


def prose_numbers(run: ModifiedRun, rates: pd.DataFrame | None = None) -> dict:
    """Every number the chapter's prose states, by glue name: the one-token edits at the largest
    target FPR against the TPR and FPR there (per attack), the similarity of one-token edits, of
    neighbours and of paraphrases (with the paraphrases' share of words changed and what they cost
    to generate), and the LOSS score's member/non-member gap beside the cost of one and of the
    middle edit count (NaN where the run lacks what a number needs). ``rates``: the run's own
    (:func:`run` sets them) unless given."""
    rates = run.rates if rates is None else rates
    lex = lexical_kinds(run.kinds)
    edits = [int(run.modified_of(k).edits.iloc[0]) for k in lex]
    top = rates.fpr_target.max()
    one = rates[(rates.kind == lex[0]) & (rates.fpr_target == top)]
    out = {
        "target_label": run.target_label,
        "n_modified": len(run.modified),
        "fpr_top": f"{top:.0%}",
        "n_mid": edits[len(edits) // 2],
    }
    pct = lambda x, lo, hi: f"{100 * x:.1f}% ({100 * lo:.1f}-{100 * hi:.1f}%)"  # noqa: E731
    out["n1_summary"] = "; ".join(
        f"{r.attack} flags {pct(r.flagged, r.flagged_lo, r.flagged_hi)} of them, against a TPR of "
        f"{pct(r.tpr, r.tpr_lo, r.tpr_hi)} on the untouched members and an FPR of {percent_text(r.fpr)}% on the "
        f"non-members"
        for r in one.itertuples()
    )
    cos = run.modified.groupby("kind")["cosine"].mean() if "cosine" in run.modified.columns else pd.Series(dtype=float)
    out["cos_n1"] = float(cos.get(lex[0], np.nan))
    out["cos_sem"] = float(cos.get(SEMANTIC, np.nan))
    out["cos_para"] = float(cos.get(PARAPHRASE, np.nan))
    para = run.modified_of(PARAPHRASE)
    changed = para["words changed (%)"].mean() if "words changed (%)" in para.columns and len(para) else np.nan
    out["changed_para"] = float(changed)
    out["n_para"] = len(para)
    out["para_cost"] = run.paraphrased.describe() if run.paraphrased is not None else "no paraphrases were made"
    if "loss" in run.columns:
        out["gap"] = float(run.scores("loss", 1).mean() - run.scores("loss", 0).mean())
        o = run.original[run.original.is_member == 1].set_index(["domain", "position"])["loss"]
        own = o.loc[list(zip(run.modified.domain, run.modified.member))].to_numpy(float)
        cost = pd.Series(own - run.modified["loss"].to_numpy(float)).groupby(run.modified.kind.to_numpy()).mean()
        out["cost_1"] = float(cost[lexical_kind(edits[0])])
        out["cost_mid"] = float(cost[lexical_kind(edits[len(edits) // 2])])
    else:
        out |= {"gap": float("nan"), "cost_1": float("nan"), "cost_mid": float("nan")}
    return out
