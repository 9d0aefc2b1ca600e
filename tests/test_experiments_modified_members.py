"""The modified-members experiment layer on synthetic scores (and once on the smoke lab)."""

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from mimirlib.core import metrics

from mimirlib.core.data import Benchmark
from mimirlib.experiments import modified_members as exp
from mimirlib.experiments import modified_members_rates as R
from mimirlib.experiments.neighbour_quality import CONTROL_COSINE, CONTROL_TEXT, size_matched_controls
from mimirlib.verdicts import modified_members as rules

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "modified_members.py"

matplotlib.use("Agg")


class WordTokenizer:
    """A whitespace tokenizer over a fixed vocabulary: enough for replace_random_tokens."""

    all_special_ids = [0]

    def __init__(self, words):
        self.vocab = ["<s>"] + sorted(set(words))
        self.ids = {w: i for i, w in enumerate(self.vocab)}

    def __len__(self):
        return len(self.vocab)

    def __call__(self, text, add_special_tokens=False, verbose=True):
        return {"input_ids": [self.ids[w] for w in text.split()]}

    def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=False):
        return " ".join(self.vocab[i] for i in ids)


def make_run(n_domains=2, members=4, trials=3, edits=(1, 5), neighbours=2, shift=None, seed=0, paraphrased=0):
    """A ModifiedRun with scores drawn per set: members N(1, 1), non-members N(0, 1); each edit kind,
    the neighbours and (for the first ``paraphrased`` members of each domain) one paraphrase sit at
    their member's score + ``shift[kind]`` (+ small noise)."""
    rng = np.random.default_rng(seed)
    shift = shift or {}
    orig, mods = [], []
    for d in range(n_domains):
        for flag, mu in ((1, 1.0), (0, 0.0)):
            for i in range(50):
                s = rng.normal(mu, 1.0)
                orig.append(
                    {
                        "domain": f"d{d}",
                        "position": i,
                        "is_member": flag,
                        "text": f"d{d} {flag} {i}",
                        "loss": s,
                        "ref:r": s / 2,
                    }
                )
    o = pd.DataFrame(orig)
    for d in range(n_domains):
        for i in range(members):
            own = o[(o.domain == f"d{d}") & (o.is_member == 1) & (o.position == i)].iloc[0]
            kinds = [(exp.lexical_kind(n), float(n), trials) for n in edits] + [(exp.SEMANTIC, np.nan, neighbours)]
            kinds += [(exp.PARAPHRASE, np.nan, 1)] if i < paraphrased else []
            for kind, n, reps in kinds:
                for t in range(reps):
                    s = own.loss + shift.get(kind, 0.0) + rng.normal(0, 0.01)
                    text = f"{kind}-{t} " + own.text.split(maxsplit=1)[1]  # its first word replaced
                    mods.append(
                        {
                            "domain": f"d{d}",
                            "member": i,
                            "original": own.text,
                            "kind": kind,
                            "edits": n,
                            "trial": t,
                            "text": text,
                            "loss": s,
                            "ref:r": s / 2,
                        }
                    )
    m = pd.DataFrame(mods)
    return exp.ModifiedRun(
        o, m, {"loss": "loss", "ref": "ref:r"}, list(dict.fromkeys(m.kind)), "target-x", members, trials
    )


# ----------------------------------------------------------------------------- intervals and rates


def test_difference_interval_is_newcombes_hybrid_score_interval():
    # Newcombe (1998), example (a): 56/70 vs 48/80 with Wilson intervals gives [0.0524, 0.3339]
    from mimirlib.core.metrics import proportion_interval

    ci1, ci2 = proportion_interval(56, 70, method="wilson"), proportion_interval(48, 80, method="wilson")
    lo, hi = metrics.difference_interval(56 / 70, ci1, 48 / 80, ci2)
    assert lo == pytest.approx(0.0524, abs=1e-4) and hi == pytest.approx(0.3339, abs=1e-4)


def test_compare_flag_rates_counts_each_set_at_the_non_members_threshold():
    nonmembers = np.arange(100.0)  # 10% FPR: the threshold is 89, ten non-members above it
    members = np.r_[np.full(30, 200.0), np.zeros(70)]
    modified = np.r_[np.full(5, 200.0), np.zeros(15)]
    rec = R.compare_flag_rates(nonmembers, members, modified, list(range(20)), 0.1)
    assert rec["fpr"] == pytest.approx(0.10) and rec["tpr"] == pytest.approx(0.30)
    assert rec["flagged"] == pytest.approx(0.25)
    assert rec["vs_fpr"] == pytest.approx(0.15) and rec["vs_tpr"] == pytest.approx(-0.05)
    assert rec["flagged_lo"] <= rec["flagged"] <= rec["flagged_hi"]
    assert rec["vs_fpr_lo"] <= rec["vs_fpr"] <= rec["vs_fpr_hi"]
    assert (rec["n_texts"], rec["n_groups"], rec["n_nonmembers"], rec["n_members"]) == (20, 20, 100, 100)


def test_compare_flag_rates_counts_members_so_correlated_trials_widen_the_interval():
    nonmembers = np.random.default_rng(0).normal(0, 1, 500)
    members = np.zeros(500)
    flags = np.r_[np.full(40, 5.0), np.full(160, -5.0)]  # 20% flagged
    independent = R.compare_flag_rates(nonmembers, members, flags, list(range(200)), 0.1)
    clustered = R.compare_flag_rates(nonmembers, members, flags, np.repeat(np.arange(10), 20), 0.1)
    # 2 of 10 members, all their 20 trials: the exact interval of 2 of 10
    width = lambda r: r["flagged_hi"] - r["flagged_lo"]  # noqa: E731
    assert clustered["flagged"] == independent["flagged"] == pytest.approx(0.2)
    assert width(clustered) > 2 * width(independent)
    assert (clustered["flagged_lo"], clustered["flagged_hi"]) == pytest.approx((0.0252, 0.5561), abs=1e-4)


def test_compare_flag_rates_none_flagged_of_36_members_is_not_a_point():
    # the review's case: 0 of 36 members (20 trials each) flagged; a cluster bootstrap gave [0, 0]
    rng = np.random.default_rng(0)
    nonmembers, members = rng.normal(0, 1, 900), rng.normal(0.1, 1, 900)
    rec = R.compare_flag_rates(nonmembers, members, np.full(720, -9.0), np.repeat(np.arange(36), 20), 0.01)
    assert rec["flagged"] == 0.0 and rec["flagged_lo"] == 0.0
    assert rec["flagged_hi"] == pytest.approx(1 - 0.025 ** (1 / 36), abs=1e-9)  # 0.0974
    assert rec["vs_fpr_lo"] < 0 < rec["vs_fpr_hi"]  # 36 members cannot show "below a 1% FPR"


def test_compare_flag_rates_rejects_mismatched_groups():
    with pytest.raises(ValueError, match="groups"):
        R.compare_flag_rates(np.zeros(10), np.zeros(10), np.zeros(5), [0, 1], 0.1)


def test_flag_rates_has_one_row_per_attack_fpr_and_kind():
    run = make_run(shift={exp.lexical_kind(1): -0.1, exp.lexical_kind(5): -3.0, exp.SEMANTIC: -1.0})
    rates = R.flag_rates(run, [0.05, 0.1])
    assert len(rates) == 2 * 2 * 3
    assert set(rates.kind) == set(run.kinds)
    big = rates[(rates.kind == exp.lexical_kind(5))]
    assert (big.flagged == 0).all()  # scores 3 below their members': never above a non-member threshold
    assert (rates.n_groups == 8).all() and (rates.n_nonmembers == 100).all()


def test_table4_shows_every_cell_with_its_interval_and_the_reference_rates():
    run = make_run()
    t = R.table4(R.flag_rates(run, [0.01, 0.1]))
    assert list(t.columns) == ["1%", "10%", "n"]
    sets = list(t.loc["loss"].index)
    assert sets == run.kinds + ["original members (TPR)", "original non-members (FPR)"]
    assert all("[" in x for x in t[["1%", "10%"]].to_numpy().ravel())
    rates = R.flag_rates(run, [0.1])
    one = rates.iloc[0]
    assert t.loc[("loss", one.kind), "n"] == f"{one.n_texts} texts of {one.n_groups} members"
    assert t.loc[("loss", "original members (TPR)"), "n"] == f"{one.n_members} texts"
    assert t.loc[("loss", "original non-members (FPR)"), "n"] == f"{one.n_nonmembers} texts"


# ----------------------------------------------------------------------------- closeness


def test_matched_lexical_kind_is_the_edit_count_of_about_the_neighbours_size():
    run = make_run()
    run.modified["words changed (%)"] = run.modified.kind.map(
        {exp.lexical_kind(1): 1.0, exp.lexical_kind(5): 6.0, exp.SEMANTIC: 5.0}
    )
    assert exp.matched_lexical_kind(run) == exp.lexical_kind(5)


def test_closeness_effects_positive_when_neighbours_stay_nearer_their_member():
    run = make_run(shift={exp.lexical_kind(1): -0.5, exp.lexical_kind(5): -0.5, exp.SEMANTIC: -0.1})
    run.modified["words changed (%)"] = 5.0
    eff = exp.closeness_effects(run)
    assert list(eff.attack) == ["loss", "ref"]
    assert eff.loc[0, "estimate"] == pytest.approx(0.4, abs=0.02)
    assert (eff.lo > 0).all() and (eff.n_members == 8).all()
    table = exp.closeness_table(eff)  # as the page shows it: attacks as rows, units named, no bare columns
    assert list(table.index) == ["loss", "ref"] and "lo" not in table.columns
    cell = f"{eff.estimate[0]:.3f} [{eff.lo[0]:.3f}, {eff.hi[0]:.3f}]"
    assert table.loc["loss", "edits minus neighbours (nats per token)"] == cell
    assert table.loc["loss", "members"] == 8 and table.loc["loss", "against"] == eff.loc[0, "lexical"]


def test_neighbour_cosines_pair_each_neighbour_with_its_size_matched_control_and_decide_the_regime_row():
    run = make_run()
    sem = run.modified.kind == exp.SEMANTIC
    run.modified["cosine"] = run.modified.kind.map({exp.lexical_kind(1): 0.99, exp.lexical_kind(5): 0.5})
    run.modified.loc[sem, "cosine"] = 0.95
    run.modified[CONTROL_COSINE] = np.nan
    run.modified.loc[sem, CONTROL_COSINE] = 0.90
    c = exp.neighbour_cosines(run, n_bootstrap=200)
    assert (c["sem"], c["rnd"]) == (pytest.approx(0.95), pytest.approx(0.90))  # the controls, not the edits
    assert c["lo"] == pytest.approx(0.05) and c["n"] == run.modified.groupby(["domain", "member"]).ngroups
    (row,) = exp.regime(run)
    assert row.key == "neighbours-masked-lm" and row.in_regime is True
    assert "random words replacing as many whole words" in row.lab_value
    run.modified.loc[sem, "cosine"] = 0.90
    assert exp.regime(run)[0].in_regime is False  # no closer than random edits of the same size
    assert exp.neighbour_cosines(make_run()) is None  # no cosines measured


def test_size_matched_controls_replace_as_many_whole_words_as_each_neighbour():
    from mimirlib.samplers import perturb

    member = "The licensee copies (the) software, without warranty; as is."
    neighbours = [
        "The user copies (the) software, without warranty; as is.",
        "The licensee reads (a) software, without notice; as is.",
        "A licensee copies (the) program, with charge; so was.",
    ]
    pool = perturb.word_pool(["alpha beta gamma delta", "epsilon zeta eta theta iota"])
    a = size_matched_controls([member] * 3, neighbours, [pool] * 3, seed=3)
    assert a == size_matched_controls([member] * 3, neighbours, [pool] * 3, seed=3)
    assert a != size_matched_controls([member] * 3, neighbours, [pool] * 3, seed=4)
    for nb, ctrl in zip(neighbours, a):
        assert perturb.word_hamming(member, ctrl) == perturb.word_hamming(member, nb)
        changed = [(x, y) for x, y in zip(member.split(), ctrl.split()) if x != y]
        for x, y in changed:  # the core replaced by a pool word, punctuation kept
            core = y.strip("();,.")
            assert core in pool and y.replace(core, "", 1) == x.replace(x.strip("();,."), "", 1)


def test_add_similarity_gives_each_embedded_neighbour_its_control(monkeypatch):
    from mimirlib.samplers import embeddings, perturb

    monkeypatch.setattr(embeddings, "cosine_to_original", lambda o, v: np.full(len(v), 0.5))
    run = make_run()
    exp.add_similarity(run, 1, seed=2)
    mods = run.modified
    sem = mods[mods.kind == exp.SEMANTIC]
    done = sem[sem.trial == 0]
    assert done[CONTROL_COSINE].eq(0.5).all() and sem[sem.trial > 0][CONTROL_COSINE].isna().all()
    assert mods[mods.kind != exp.SEMANTIC][CONTROL_TEXT].isna().all()
    for r in done.itertuples():
        ctrl = getattr(r, CONTROL_TEXT)
        k = min(perturb.word_hamming(r.original, r.text), len(r.original.split()))
        assert perturb.word_hamming(r.original, ctrl) == k
        members = run.original[(run.original.domain == r.domain) & (run.original.is_member == 1)].text
        pool = set(perturb.word_pool(list(members)))
        assert all(y in pool for x, y in zip(r.original.split(), ctrl.split()) if x != y)
    assert exp.neighbour_cosines(run)["rnd"] == pytest.approx(0.5)


def test_closeness_effects_empty_without_neighbours():
    run = make_run()
    run.modified = run.modified[run.modified.kind != exp.SEMANTIC]
    run.kinds = [k for k in run.kinds if k != exp.SEMANTIC]
    run.modified["words changed (%)"] = 1.0
    assert exp.closeness_effects(run).empty and exp.closeness_table(exp.closeness_effects(run)).empty


def test_add_similarity_measures_words_changed_without_embeddings():
    run = make_run()
    exp.add_similarity(run, 0)
    assert "cosine" not in run.modified.columns
    assert (run.modified["words changed (%)"] > 0).all()
    summary = exp.similarity_summary(run)
    assert {"original members", "non-members"} <= set(summary.index)
    assert summary.loc["original members", "mean loss score"] == pytest.approx(run.scores("loss", 1).mean())


# ----------------------------------------------------------------------------- making the modified members


def test_modify_members_makes_every_edit_count_and_trial_and_takes_the_neighbours():
    words = [f"w{i}" for i in range(50)]
    tok = WordTokenizer(words)
    members = tuple(" ".join(words[i : i + 20]) for i in range(3))
    bench = Benchmark(
        "b", members, ("x " * 5,) * 3, member_neighbors=((("n1", "n2"),) * 3), nonmember_neighbors=((("m1", "m2"),) * 3)
    )
    mods = exp.modify_members({"b": bench}, tok, edits=[1, 3], trials=4, members_per_domain=2, seed=0)
    assert len(mods) == 2 * (2 * 4 + 2)
    one = mods[mods.kind == exp.lexical_kind(3)]
    changed = [sum(a != b for a, b in zip(o.split(), t.split())) for o, t in zip(one.original, one.text)]
    assert changed == [3] * len(one)
    again = exp.modify_members({"b": bench}, tok, edits=[1, 3], trials=4, members_per_domain=2, seed=0)
    assert list(again.text) == list(mods.text)  # one seeded generator: reproducible


# ----------------------------------------------------------------------------- figure, sizes, prose


def test_distribution_figure_has_a_panel_per_attack_and_row_per_shown_kind():
    import matplotlib.pyplot as plt

    fig = exp.distribution_figure(make_run())
    assert len(fig.axes) == 4
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert len(labels) == 3 and "n=5" in labels[2]  # members, non-members, the largest edit count
    plt.close(fig)


def test_sample_size_states_members_domains_edits_and_trials():
    run = make_run()
    s = exp.sample_size(run, "lexical")
    assert s.startswith("4 members per domain x 2 domains x 2 edit counts (n = 1, 5) x 3 trials = 48 edited texts")
    assert "100 non-members" in s
    assert "2 neighbours = 16 neighbours of 8 members" in exp.sample_size(run, "semantic")
    with pytest.raises(ValueError):
        exp.sample_size(run, "rewording")


def test_prose_numbers_reads_the_one_token_cell_and_the_loss_gap():
    run = make_run(shift={exp.lexical_kind(1): -0.2, exp.lexical_kind(5): -1.0})
    rates = R.flag_rates(run, [0.05, 0.1])
    p = exp.prose_numbers(run, rates)
    assert p["fpr_top"] == "10%" and p["n_mid"] == 5
    assert p["cost_1"] == pytest.approx(0.2, abs=0.01) and p["cost_mid"] == pytest.approx(1.0, abs=0.01)
    assert "loss flags" in p["n1_summary"] and "ref flags" in p["n1_summary"]
    assert np.isnan(p["cos_n1"])  # no embeddings measured


# ----------------------------------------------------------------------------- on the smoke lab


def chapter_params(**changes) -> exp.Params:
    """The chapter's parameters as its cell declares them, with ``changes``."""
    from mimirlib.runner import notebook_parameters

    declared = notebook_parameters(NOTEBOOK)
    return exp.Params({k: v["default"] for k, v in declared.items()}).replace(**changes)


SMOKE = dict(profile="smoke", members_per_domain=1, edits=[1], trials=2, dtype="float32", paraphrase_members=0)


def test_score_modified_members_on_the_smoke_lab():
    run = exp.score_modified_members(chapter_params(**SMOKE))
    assert list(run.columns) == ["loss", "ref"]
    assert run.n_edited_members() == len(run.domains)
    assert set(run.kinds) == {exp.lexical_kind(1), exp.SEMANTIC}
    assert run.modified[["loss", "ref:" + run.columns["ref"].split(":", 1)[1]]].notna().all().all()
    first = run.original[(run.original.is_member == 1) & (run.original.position == 0)]
    assert set(run.modified.original) == set(first.text)


# ----------------------------------------------------------------------------- paraphrases


class FakeGenerator:
    """Paraphrases by reversing the words (no model)."""

    model_id = "fake"

    def __init__(self):
        self.calls = 0

    def __call__(self, texts, settings):
        from mimirlib.samplers.paraphrase import Generation

        self.calls += 1
        return [Generation(" ".join(reversed(t.split())), 5, True) for t in texts]


def test_paraphrase_members_takes_the_first_members_of_each_domain(tmp_path):
    from mimirlib.samplers.paraphrase import GenerationSettings, ParaphraseCache

    benches = {
        "a": Benchmark("a", ("a0 x y", "a1 x y", "a2 x y"), ("n",) * 3),
        "b": Benchmark("b", ("b0 x y", "b1 x y"), ("n",) * 2),
    }
    cache = ParaphraseCache(tmp_path)
    rows, done = exp.make_paraphrases(
        benches, FakeGenerator(), members_per_domain=2, settings=GenerationSettings(), cache=cache
    )
    assert list(zip(rows.domain, rows.member)) == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert list(rows.text) == ["y x a0", "y x a1", "y x b0", "y x b1"] and set(rows.kind) == {exp.PARAPHRASE}
    assert rows.edits.isna().all() and (rows.trial == 0).all() and len(done.texts) == 4


def test_paraphrase_parameters_are_checked_before_anything_loads():
    for name, value in (("paraphrase_members", -1), ("paraphrase_tokens", 0), ("paraphrase_batch", 1.5)):
        kw = {"paraphrase_members": 1, "paraphrase_tokens": 8, "paraphrase_batch": 2} | {name: value}
        with pytest.raises(ValueError, match=name):
            exp.score_modified_members(chapter_params(profile="no-such-profile", split="x", **kw))


def test_paraphrases_are_a_kind_of_their_own_in_rates_figure_sizes_and_prose():
    run = make_run(paraphrased=3, shift={exp.PARAPHRASE: -0.5})
    assert exp.lexical_kinds(run.kinds) == [exp.lexical_kind(1), exp.lexical_kind(5)]
    rates = R.flag_rates(run, [0.05, 0.1])
    para = rates[rates.kind == exp.PARAPHRASE]
    assert len(para) == 2 * 2 and (para.n_groups == 6).all() and para.edits.isna().all()
    assert exp.sample_size(run, "paraphrase").startswith(
        "3 members per domain x 2 domains x 1 attempt = 6 paraphrase attempts"
    )
    assert "48 edited texts from 8 members" in exp.sample_size(run, "lexical")
    exp.add_similarity(run, 0)
    p = exp.prose_numbers(run, rates)
    assert p["n_para"] == 6 and p["changed_para"] > 0 and p["para_cost"] == "no paraphrases were made"
    fig = exp.distribution_figure(run)
    assert len(fig.axes) == 6  # lexical, neighbours, paraphrases x two attacks
    assert "paraphrases" in fig.axes[4].get_title()


def test_add_similarity_embeds_every_paraphrase_even_without_similarity_trials(monkeypatch):
    from mimirlib.samplers import embeddings

    seen = []

    def fake_cosine(originals, variants):
        seen.append(len(variants))
        return np.full(len(variants), 0.5)

    monkeypatch.setattr(embeddings, "cosine_to_original", fake_cosine)
    run = exp.add_similarity(make_run(paraphrased=2), 0)
    assert seen == [4]
    para = run.modified_of(exp.PARAPHRASE)
    assert (para.cosine == 0.5).all() and run.modified[run.modified.kind != exp.PARAPHRASE].cosine.isna().all()


def test_paraphrase_samples_show_one_pair_per_domain():
    run = make_run(n_domains=3, paraphrased=2)
    s = exp.paraphrase_samples(run, 2)
    assert list(s.columns) == ["domain", "original", "paraphrase", "cosine", "words changed (%)"]
    assert list(s.domain) == ["d0", "d1"]
    assert s.original[0] == "d0 1 0" and s.paraphrase[0].startswith(exp.PARAPHRASE)
    assert exp.paraphrase_samples(make_run(), 3).empty


def test_score_modified_members_paraphrases_on_the_smoke_lab(tmp_path, monkeypatch):
    from mimirlib.samplers import paraphrase

    monkeypatch.setattr(paraphrase, "paraphrase_dir", lambda: tmp_path)
    gen = FakeGenerator()
    p = chapter_params(**SMOKE | dict(attacks=["loss"], trials=1, paraphrase_members=2, paraphrase_tokens=8))
    run = exp.score_modified_members(p, generator=gen)
    para = run.modified_of(exp.PARAPHRASE)
    assert len(para) == 2 * len(run.domains) and para.loss.notna().all()
    assert run.paraphrased.settings.max_new_tokens == 8 and "paraphrases:" in run.describe()
    again = exp.score_modified_members(p, generator=gen)
    assert gen.calls == 1 and all(again.paraphrased.cached)  # the second run generates nothing


def test_the_chapter_run_adds_similarity_rates_and_closeness_and_four_verdicts_in_page_order():
    p = chapter_params(**SMOKE | dict(similarity_trials=0, n_bootstrap=50, fpr_targets=[0.1]))
    run = exp.run(p)
    assert run.target is not None and "words changed (%)" in run.modified.columns
    assert set(run.rates.kind) == set(run.kinds) and set(run.rates.attack) == {"loss", "ref"}
    assert run.rates.equals(R.flag_rates(run, [0.1]))  # as the chapter computed it
    assert run.closeness.equals(exp.closeness_effects(run, n_bootstrap=50, seed=p.seed))
    v = exp.verdicts(run)
    assert [x.key for x in v] == [
        rules.LEXICAL.key,
        rules.SEMANTIC.key,
        rules.CLOSER.key,
        rules.PARAPHRASED.key,
    ]
    assert exp.prose_numbers(run) == exp.prose_numbers(run, run.rates)
    rows = exp.regime(run)  # similarity_trials=0: no cosines for the neighbours, so no row
    assert rows == [] and v[1].regime == ""


class TerseGenerator(FakeGenerator):
    """Answers the first text with "1" (lab draw 10's SmolLM2 did), the others as FakeGenerator."""

    model_id = "terse"

    def __call__(self, texts, settings):
        from mimirlib.samplers.paraphrase import Generation

        out = super().__call__(texts, settings)
        return [Generation("1", 1, True)] + out[1:]


def test_a_paraphrase_reply_too_short_to_score_is_left_out_and_counted(tmp_path, monkeypatch):
    # the chapter failed on lab draw 10: "text '1' has 1 token(s); at least 2 are needed to score it"
    from mimirlib.samplers import paraphrase

    monkeypatch.setattr(paraphrase, "paraphrase_dir", lambda: tmp_path)
    p = chapter_params(**SMOKE | dict(attacks=["loss"], trials=1, paraphrase_members=1, paraphrase_tokens=8))
    run = exp.score_modified_members(p, generator=TerseGenerator())
    para = run.modified_of(exp.PARAPHRASE)
    assert run.unscorable == ("1",) and len(para) == len(run.domains) - 1 and "1" not in set(para.text)
    assert "(1 more too short to score, left out)" in exp.sample_size(run, "paraphrase")
