# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: mimir-book
#     language: python
#     name: mimir-book
# ---

# %% [markdown]
# # n-gram overlap: when non-members are not so different
#
# **The paper's claim** (MIMIR {cite:p}`duan2024mimir` section 3.2.2, Table 2, Figures 3, 7 and
# 14, appendix B). Natural text repeats itself: phrasings, licence headers, boilerplate. So a
# "{term}`non-member`" shares many of
# its word n-grams with the training data: in the Pile, Wikipedia, ArXiv and PubMed Central
# non-members have a mean 7-gram overlap of 33-41%, GitHub and DM Mathematics 73-77%. The
# paper's hypothesis: **higher member/non-member overlap makes MIAs harder.** Resampling
# non-members to at most 20% 7-gram overlap raises {term}`AUC` sharply (Table 2: Wikipedia LOSS
# 0.516 -> 0.666, GitHub zlib 0.690 -> 0.908), though the paper warns that this drifts towards
# *distribution* inference. Appendix B.3 adds that the usual <= 80% 13-gram {term}`decontamination`
# leaves high-overlap domains with outlier non-members (Figure 7).
#
# **What the lab does.** The {term}`n-gram overlap` of a non-member is the fraction of its word
# n-grams (stride 1) that occur anywhere in the lab's training pool, computed with a
# {term}`Bloom filter` sized for a {glue:text}`bloom_fpr_pct:g`% false-positive rate, as the
# paper does at Pile scale, and checked against an exact set. The lab's `ngram_7_0.2` benchmark keeps the first of
# the same members, as many as it finds non-members among held-out documents whose 7-gram
# overlap is at most 20% (the sizes table). The two
# splits are compared *paired*: on the members they share, with each split's non-members
# resampled on their own. A domain where the redraw barely lowers the non-members' overlap (their
# natural overlap already low) says nothing about overlap, so the verdicts count only the domains
# where it lowered the mean 7-gram overlap by at least {glue:text}`min_overlap_drop`. The {term}`blind baseline` (model-free, after
# {cite:t}`das2024blind`), the book's addition, shows how much of any AUC gain is distribution
# shift.

# %% tags=["parameters", "hide-input"]
profile = "lab"  # which embedded lab to build and read: "smoke" (tiny, for tests) or "lab" (the book's default); "paper" names real models and data
draw = None  # the lab's draw: None reads the profile's lab; N, the lab drawn with seed N (its splits, selection, initialisation, data order), built if missing; set by mimir-run --draw N
models = None  # target models by hub name or local path, smallest first; None means the lab's one-epoch suite
revision = None  # revision of the target models, e.g. "step99000" for Pythia; None means the default branch
reference_models = None  # reference models by hub name or local path; None means the lab's disjoint-pool reference
benchmark_source = None  # a folder of MIMIR-schema benchmarks, a local copy of the MIMIR dataset repo, or "iamgroot42/mimir"; None means the lab's
domains = None  # domains (MIMIR configs) to evaluate; None means every domain of the lab
natural_split = "ngram_13_0.8"  # the natural benchmark (MIMIR's default decontamination)
low_overlap_split = "ngram_7_0.2"  # the benchmark whose non-members have at most 20% 7-gram overlap (Table 2)
attacks = ["loss", "ref", "zlib", "min_k", "min_k_pp"]  # attacks to run (see mimirlib.core.attacks.ATTACKS)
min_k = 0.2  # k for Min-K% and Min-K%++
ns = [4, 7, 13]  # n of the word n-gram overlap distributions (Figure 14)
bloom_fpr = 0.01  # false-positive rate the Bloom filter is sized for (the paper: below 1%)
blind_folds = 5  # cross-validation folds of the model-free baseline
n_samples = None  # cap on members (and non-members) per domain; None means all
n_bootstrap = 1000  # bootstrap resamples for AUC intervals
seed = 0  # seed for the bootstrap and the baseline's folds
window = None  # tokens per scoring window; None means each model's trained context (the lab's: 256). Longer texts are scored whole, window by window
stride = None  # tokens between windows; None means half the window (each token then sees at least half a window of context)
batch_size = 16  # windows per forward pass
engine = "local"  # where forward passes run: "local" (this process) or "ray" (workers on a Ray cluster: a local one, or the one $RAY_ADDRESS names; see the Running at scale page)
ray_address = None  # the Ray cluster to join when the engine is "ray": "auto", "host:port" or "ray://host:port"; None starts a local one (or joins the one $RAY_ADDRESS names)
ray_workers = None  # Ray workers, each loading a model once; None: one per GPU of the cluster (one per CPU without GPUs)
ray_gpus_per_worker = None  # GPUs each Ray worker holds; None: 1 on a cluster with GPUs, else 0 (0.5 puts two workers on one GPU)
ray_timeout = None  # seconds a named Ray head has to answer; None: 8 (a wrong address stops the chapter in about that time, in one line)
dtype = "auto"  # model weights' dtype: "auto" (float32 on CPU, bfloat16 on GPU), "fast" (bfloat16 where native), "float32", "bfloat16"

# %% tags=["hide-input"]
from IPython.display import display
from myst_nb import glue

from mimirlib import verdicts
from mimirlib.display import plots, report
from mimirlib.display.paper_tables import paper_table
from mimirlib.experiments import ngram_overlap as exp
from mimirlib.runner import saved

p = exp.Params.from_cell(globals())
plots.set_style()
glue("bloom_fpr_pct", 100 * p.bloom_fpr, display=False)

# %% [markdown]
# ## The overlap index
# One index per n over the whole training pool (on real data, where the training set is not at
# hand, the benchmark's members of each domain stand in for it). The Bloom filter never misses
# an n-gram that is there; it may report one that is not, at the configured rate. Its 7-gram
# overlaps are compared with the exact ones on the same non-members. The overlap of a text is
# the share of its n-grams the index holds; the index computes it for many texts at once:
#
# ```{literalinclude} /mimirlib/core/ngrams.py
# :pyobject: NgramIndex.overlaps
# ```
#
# The run below measures the overlaps, then scores both splits with every attack (the sections
# after the overlap figures read its results).

# %%
run = exp.run(p)
print(run.cache_note)
display(run.study.build_seconds)
display(run.study.bloom_check())

# %% tags=["remove-cell"]
saved.keep(exp, p, run=run)  # for the handouts: mimirlib.runner.saved

# %% [markdown]
# ## Figures 3 and 14 analogue: how much do non-members overlap the training data?
# Distribution of the overlap of each domain's natural non-members, for each n; the table gives
# the means. Both come from the Bloom filter, so they sit slightly above the exact overlaps of
# the same non-members (the redraw table below, and the lab page's non-member table): by
# {glue:text}`bloom_excess:.5f` on average for 7-grams in this run, the filter's false positives.
# The verdicts use the exact values.

# %%
glue("fig_overlap", exp.overlap_figure(run.study.overlaps), display=False)
display(run.study.means().round(3))

# %% [markdown]
# ```{glue:figure} fig_overlap
# n-gram overlap of natural non-members with the training pool, per domain, for each n.
# ```
#
# The verdict on high overlap reads each domain on its own: the mean exact 7-gram overlap with
# its 95% {term}`bootstrap interval` over the non-members, "high" when the whole interval is at
# or above 30% (the floor of the paper's range), "low" when it is wholly below, undecided
# otherwise. Beside it, the paper's mean for the Pile domain the lab domain plays (the lowest
# printed value, Wikipedia's 32.5%, where Figure 3 has no counterpart).

# %%
display(report.words(exp.overlap_means(run).round(3)))

# %% [markdown]
# ## Appendix B.3 analogue: what the 13-gram <= 80% decontamination removes
# All held-out candidates of each domain before decontamination, versus the non-members that
# the natural benchmark kept; the 7-gram overlap distribution of both.

# %%
glue("fig_decontam", exp.decontamination_figure(run.decontaminated), display=False)
display(exp.decontamination_table(run.decontaminated).round(3))

# %% [markdown]
# ```{glue:figure} fig_decontam
# 7-gram overlap of every held-out candidate, and of those kept by the 13-gram <= 80% rule.
# ```
#
# ## Did the redraw lower the overlap?
# Mean exact 7-gram overlap of each domain's natural and redrawn non-members, and the members the
# two splits share. Only the domains marked informative enter the verdicts on the redraw.

# %%
display(report.words(exp.shift_table(run.shift).round(3)))

# %% [markdown]
# ## Table 2 analogue: natural non-members versus non-members with <= 20% 7-gram overlap
# Each split on its own texts: the low-overlap split's members are the first of the natural
# split's, as many as its non-members; the verdicts' gains are paired on those shared members,
# so they can differ from the difference of two AUCs here. AUC per domain and attack for the largest target,
# with the model-free baseline beside them. Domains where fewer than ten held-out documents pass
# the 20% threshold have no low-overlap benchmark (the count is in the last table).

# %%
display(run.splits.table2(run.largest).round(3))
display(run.splits.sizes())

# %% [markdown]
# The paper's Table 2 (Pythia-dedup-12B, AUC):

# %%
display(paper_table("mimir", "2"))

# %% [markdown]
# ## AUC gain from the low-overlap non-members, per target size
# Each split's own AUC, all domains with a redraw (informative or not).

# %%
display(run.splits.gain_summary().round(3))
glue("fig_gain", exp.gain_figure(run.splits, run.largest), display=False)

# %% [markdown]
# ```{glue:figure} fig_gain
# AUC gain from resampling non-members to low 7-gram overlap, per domain and attack, largest target.
# ```
#
# ## Paired effects
# The comparisons the verdicts rest on, for the largest target: each attack's AUC gain, the blind
# baseline's, and how much more each other attack gains than the {term}`reference attack`. The
# interval is a 95% {term}`paired bootstrap` over the shared members and each split's
# non-members: use it for "would other texts give the same effect". The {term}`seed sd` (where
# the lab trained seed replicates of the model) is the spread of the same estimate over
# independently trained models: use it for "would another training run give the same effect".
# An effect is {term}`clear <clear effect>` only if both exclude zero (clear sign 0: inside the
# noise). The first table measures both spreads on every target the lab trained seed replicates
# of (the largest among them), in the domains the verdicts use (it is empty when no domain is
# informative).

# %%
display(exp.seed_spread(run.splits, p.n_bootstrap, p.seed).round(4))
display(exp.effects_table({"AUC gain": run.gain_effects, "blind gain": run.blind_effects,
                           "gain(other) - gain(ref)": run.ref_effects}).round(3))

# %% [markdown]
# (verdicts-ngram-overlap)=
# ## Verdicts
# Each claim gets a {term}`verdict` from the rule printed beside it. The claims about the attacks
# count the paper's own (Table 2's rows); Min-K%++, published after it, is reported beside them in
# the evidence, not counted.

# %%
display(verdicts.publish(exp.verdicts(run), "ngram_overlap"))
report.glue_values(exp.prose_numbers(run.study, run.shift, run.gain_effects, run.blind_effects))
glue("largest", run.largest, display=False)

# %% [markdown]
# **Reading the verdicts.** The lab's non-members overlap its training pool most in
# {glue:text}`max_m7_domain` (mean exact 7-gram overlap {glue:text}`max_m7:.2f`) and least in
# {glue:text}`min_m7_domain` ({glue:text}`min_m7:.2f`); read domain by domain against the 30%
# bar, with each mean's interval: **{glue:text}`verdict_0`**. Of the
# {glue:text}`n_low_domains` domains with a redraw, it lowered the non-members' overlap enough to
# inform the claims in {glue:text}`n_informative`; only those count below. There, the
# low-overlap non-members change the AUC against {glue:text}`largest` by
# {glue:text}`mean_gain:+.3f` on average (**{glue:text}`verdict_1`**), while the blind baseline,
# which never sees a model, changes by {glue:text}`blind_gain:+.3f`
# (**{glue:text}`verdict_2`**): whatever share of the gain the baseline also gets is the
# benchmark changing, not the model leaking. Reference attack gaining less than the others, on
# the paired difference of the gains: **{glue:text}`verdict_3`**. The Bloom filter's mean excess
# over the exact 7-gram overlap was {glue:text}`bloom_excess:.5f` (it is sized for a
# {glue:text}`bloom_fpr_pct:g`% false-positive rate per n-gram looked up).
#
# ## Re-run it differently
# ```bash
# .venv/bin/python -m mimirlib.runner ngram_overlap -p 'ns=[5, 10]' -p bloom_fpr=0.001
# .venv/bin/python -m mimirlib.runner ngram_overlap --list-params
# python scripts/bench_ngrams.py       # n-grams per second for building and querying the index
# ```
# **With the paper's data**: `--profile paper` runs Pythia-dedup-12B at `step99000` on the MIMIR
# dataset's `ngram_13_0.8` and `ngram_7_0.2` splits; the overlap is then measured against each
# domain's members, since the Pile's training set is not downloaded.

# %% [markdown]
# ## Exercises
# Every exercise works on this chapter's own models and texts: what it needs is already in the
# signal cache, so it adds no forward pass. Write your prediction down before you open a solution.
#
# :::{exercise} Predict, then run: Min-K% at k = 5% on both kinds of non-members
# :label: ex-ngram_overlap-1
#
# On the {glue:text}`ex_domain` domain, against the largest target, predict whether Min-K% at
# k = 5% still separates members from the low-overlap non-members better than from the natural
# ones. Then run
# ```bash
# .venv/bin/python -m mimirlib.runner ngram_overlap -p min_k=0.05
# ```
# and read Min-K%'s rows of the Table 2 analogue.
# :::
#
# :::{solution} ex-ngram_overlap-1
# :class: dropdown
#
# On this run's cached signals, Min-K% at k = 5% has AUC {glue:text}`ex_mink_nat:.3f` with the
# natural non-members and {glue:text}`ex_mink_low:.3f` with the low-overlap ones
# ({glue:text}`ex_domain`, largest target). The low-overlap non-members share fewer phrases with
# the training data, so any attack that keys on familiar wording finds them easier to reject;
# whether that is membership inference or {term}`distribution inference <blind baseline>` is what
# the blind baseline's gain in the paired-effects table tells you.
# :::
#
# :::{exercise} Change a parameter: other n, a tighter filter
# :label: ex-ngram_overlap-2
#
# Re-run the overlap study with 5-, 7- and 10-grams and a Bloom filter sized for 0.1% false
# positives:
# ```bash
# .venv/bin/python -m mimirlib.runner ngram_overlap -p 'ns=[5, 7, 10]' -p bloom_fpr=0.001
# ```
# What do you expect of the overlap distributions, the Bloom filter's excess over the exact
# overlap, and the index build time?
# :::
#
# :::{solution} ex-ngram_overlap-2
# :class: dropdown
#
# Shorter n-grams are shared more often, so the 5-gram overlaps sit higher than the 10-gram ones
# (Figures 3 and 14 analogue). A filter sized for ten times fewer false positives needs more bits per item,
# so its excess over the exact overlap shrinks and its build takes a little longer ("The overlap
# index" tables). The attack AUCs do not change: they do not depend on the overlap study.
# :::
#
# :::{exercise} Extend the library: a ratio-of-losses attack
# :label: ex-ngram_overlap-3
#
# Register an attack named `loss_ratio` with score(x) = -(L_target(x) / L_ref(x)) (higher means
# "more likely a member") through `mimirlib.core.attacks.register(name, label, needs=("reference",))`;
# `x.target.nll` and `x.reference.nll` are the mean losses. The check cell scores it on the
# {glue:text}`ex_domain` low-overlap benchmark, against the largest target with the chapter's
# first reference model, and compares it with the instructor's key. Does calibrating by a
# reference shrink the low-overlap gain, as the paper's reference attack does?
# :::

# %% tags=["hide-input"]
import mimirlib.core.attacks
from mimirlib.teach import exercises

ex_domain, ex_kw = exp.exercise_domain(run), dict(options=p.scoring())
ex_target, ex_ref = run.suite.model(run.suite.targets[-1]), run.suite.model(next(iter(run.suite.references.values())))
ex_nat, ex_low = run.benchmarks.natural[ex_domain], run.benchmarks.low[ex_domain]
report.glue_values({"ex_domain": ex_domain, "ex_folds": p.blind_folds,
                    "ex_mink_nat": exercises.texts_auc(ex_target, ex_nat.members, ex_nat.nonmembers, "min_k", k=0.05, **ex_kw),
                    "ex_mink_low": exercises.texts_auc(ex_target, ex_low.members, ex_low.nonmembers, "min_k", k=0.05, **ex_kw),
                    "ex_ref_low": exercises.texts_auc(ex_target, ex_low.members, ex_low.nonmembers, "ref", reference=ex_ref, **ex_kw)})

# %% tags=["hide-input", "solution"] nbgrader={"grade": false, "grade_id": "ex-ngram_overlap-3-code", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
@mimirlib.core.attacks.register("loss_ratio", "Loss ratio", needs=("reference",))
def loss_ratio(x):
    return -x.target.nll / x.reference.nll
### END SOLUTION

# %% tags=["hide-input", "autocheck"] nbgrader={"grade": true, "grade_id": "ex-ngram_overlap-3-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
report.glue_values({"ex_ratio_low": exercises.check_attack("loss_ratio", ex_target, ex_low.members, ex_low.nonmembers, reference=ex_ref, **ex_kw)})

# %% [markdown]
# :::{solution} ex-ngram_overlap-3
# :class: dropdown
#
# The solution is the code cell above (click to show it). On the {glue:text}`ex_domain`
# low-overlap benchmark the ratio reaches AUC {glue:text}`ex_ratio_low:.3f`, the reference
# attack {glue:text}`ex_ref_low:.3f`. The paper's reading (appendix B.2): a reference trained on
# similar text also finds familiar wording easy, so dividing (or subtracting) by its loss would
# cancel part of what makes low-overlap non-members easy to reject. Whether it does in the lab is
# measured, not assumed: compare the reference attack's gain with the others' in the "AUC gain
# from the low-overlap non-members" table, which the B.2 verdict tallies.
# :::
#
# :::{exercise} Change a parameter: the blind baseline's folds
# :label: ex-ngram_overlap-4
#
# The model-free {term}`blind baseline` is cross-validated over {glue:text}`ex_folds` folds.
# Re-run with two:
# ```bash
# .venv/bin/python -m mimirlib.runner ngram_overlap -p blind_folds=2
# ```
# Which numbers move, and which cannot?
# :::
#
# :::{solution} ex-ngram_overlap-4
# :class: dropdown
#
# Only the baseline's rows move: with two folds it trains on half the texts each time, so it is
# weaker or noisier, and its gain from the low-overlap redraw changes with it. The attacks' AUCs
# cannot move: they use no folds. If the baseline still separates the low-overlap non-members, the
# redraw changed the distribution, not only membership.
# :::
#
# ## Self-check quiz
#
# **1.** What does decontamination at "13-gram overlap at most 80%" remove?
#
# - (a) Members that overlap the test set.
# - (b) Non-member candidates whose 13-grams mostly occur in the training data (near-copies of
#   members), which would otherwise be counted as non-members.
# - (c) Every non-member that shares a phrase with the training data.
#
# :::{dropdown} Answer
# (b). See the "Appendix B.3 analogue" section.
# :::
#
# **2.** Why can a Bloom filter report more overlap than the exact index, but never less?
#
# - (a) It has false positives (a hash collision says "seen"), never false negatives.
# - (b) It has false negatives.
# - (c) It counts each n-gram twice.
#
# :::{dropdown} Answer
# (a). See "The overlap index": the excess is measured.
# :::
#
# **3.** AUC rises when non-members are redrawn with low overlap. Which reading is the paper's
# warning?
#
# - (a) The attack got better at membership.
# - (b) The benchmark got easier because the two sets differ in distribution: a model-free
#   classifier can then separate them too.
#
# :::{dropdown} Answer
# (b). The blind baseline's gain measures it.
# :::
