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
# {term}`Bloom filter` sized for a {glue:text}`bloom_fpr_pct:.0f`% false-positive rate, as the
# paper does at Pile scale, and checked against an exact set. The lab's `ngram_7_0.2` benchmark keeps the same members and
# redraws non-members among held-out documents whose 7-gram overlap is at most 20%. The two
# splits are compared *paired*: on the members they share, with each split's non-members
# resampled on their own. A domain whose natural non-members were already below 20% overlap
# says nothing about overlap (the redraw changes nothing there), so the verdicts count only the
# domains where the redraw lowered the overlap. The {term}`blind baseline` (model-free, after
# {cite:t}`das2024blind`), the book's addition, shows how much of any AUC gain is distribution
# shift.

# %% tags=["parameters", "hide-input"]
profile = "lab"  # which embedded lab to build and read: "smoke" (tiny, for tests) or "lab" (the book's default); "paper" names real models and data
models = None  # target models by hub name or local path, smallest first; None means the lab's one-epoch suite
revision = None  # revision of the target models, e.g. "step99000" for Pythia; None means the default branch
reference_models = None  # reference models by hub name or local path; None means the lab's disjoint-pool reference
benchmark_source = None  # a folder of MIMIR-schema benchmarks, a local copy of the MIMIR dataset repo, or "iamgroot42/mimir"; None means the lab's
domains = None  # domains (MIMIR configs) to evaluate; None means every domain of the lab
natural_split = "ngram_13_0.8"  # the natural benchmark (MIMIR's default decontamination)
low_overlap_split = "ngram_7_0.2"  # the benchmark whose non-members have at most 20% 7-gram overlap (Table 2)
attacks = ["loss", "ref", "zlib", "min_k", "min_k_pp"]  # attacks to run (see mimirlib.attacks.ATTACKS)
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
dtype = "auto"  # model weights' dtype: "auto" (float32 on CPU, bfloat16 on GPU), "float32", "bfloat16"

# %% tags=["hide-input"]
from IPython.display import display
from myst_nb import glue

from mimirlib import plots, report, verdicts
from mimirlib.experiments import ngram_overlap as exp
from mimirlib.paper_tables import paper_table
from mimirlib.signals import SignalCache
from mimirlib.suite import resolve_suite
from mimirlib.verdicts import ngram_overlap as rules

plots.set_style()
suite = resolve_suite(profile, models=models, reference_models=reference_models, benchmark_source=benchmark_source,
                      domains=domains, revision=revision, dtype=dtype)
bench = exp.load(suite, natural_split, low_overlap_split, n_samples)
glue("bloom_fpr_pct", 100 * bloom_fpr, display=False)

# %% [markdown]
# ## The overlap index
# One index per n over the whole training pool (on real data, where the training set is not at
# hand, the benchmark's members of each domain stand in for it). The Bloom filter never misses
# an n-gram that is there; it may report one that is not, at the configured rate. Its 7-gram
# overlaps are compared with the exact ones on the same non-members.

# %%
study = exp.overlap_study(bench, ns, bloom_fpr)
display(study.build_seconds)
display(study.bloom_check())

# %% [markdown]
# ## Figures 3 and 14 analogue: how much do non-members overlap the training data?
# Distribution of the overlap of each domain's natural non-members, for each n; the table gives
# the means. Both come from the Bloom filter, so they sit slightly above the exact overlaps of
# the same non-members (the redraw table below, and the lab page's non-member table): by
# {glue:text}`bloom_excess:.5f` on average for 7-grams in this run, the filter's false positives.
# The verdicts use the exact values.

# %%
glue("fig_overlap", exp.overlap_figure(study.overlaps), display=False)
display(study.means().round(3))

# %% [markdown]
# ```{glue:figure} fig_overlap
# n-gram overlap of natural non-members with the training pool, per domain, for each n.
# ```
#
# ## Appendix B.3 analogue: what the 13-gram <= 80% decontamination removes
# All held-out candidates of each domain before decontamination, versus the non-members that
# the natural benchmark kept; the 7-gram overlap distribution of both.

# %%
dec = exp.decontamination(bench, study)
glue("fig_decontam", exp.decontamination_figure(dec), display=False)
display(exp.decontamination_table(dec).round(3))

# %% [markdown]
# ```{glue:figure} fig_decontam
# 7-gram overlap of every held-out candidate, and of those kept by the 13-gram <= 80% rule.
# ```
#
# ## Did the redraw lower the overlap?
# Mean exact 7-gram overlap of each domain's natural and redrawn non-members, and the members the
# two splits share. Only the domains marked informative enter the verdicts on the redraw.

# %%
shift = exp.overlap_shift(bench, study)
display(shift.set_index("domain").assign(informative=rules.informative_domains(shift)).round(3))

# %% [markdown]
# ## Table 2 analogue: natural non-members versus non-members with <= 20% 7-gram overlap
# Same members; only the non-members change. AUC per domain and attack for the largest target,
# with the model-free baseline beside them. Domains where fewer than ten held-out documents pass
# the 20% threshold have no low-overlap benchmark (the count is in the last table).

# %%
cache = SignalCache.default()
run = exp.score_splits(suite, bench, attacks, min_k=min_k, cache=cache, window=window, stride=stride, batch_size=batch_size,
                       n_bootstrap=n_bootstrap, seed=seed, blind_folds=blind_folds,
                       replicate_domains=rules.informative_names(shift), engine=engine)
print(f"signal cache: {cache.hits} texts read from disk, {cache.misses} computed")
largest = run.targets[-1]
display(run.table2(largest).round(3))
display(run.sizes())

# %% [markdown]
# The paper's Table 2 (Pythia-dedup-12B, AUC):

# %%
display(paper_table("mimir", "2"))

# %% [markdown]
# ## AUC gain from the low-overlap non-members, per target size
# Each split's own AUC, all domains with a redraw (informative or not).

# %%
display(run.gain_summary().round(3))
glue("fig_gain", exp.gain_figure(run, largest), display=False)

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
# noise). The lab's largest target has one seed; the first table
# measures both spreads on the targets that have replicates, in the domains the verdicts use
# (it is empty when no domain is informative).

# %%
gain_fx = exp.auc_gain_effects(run, largest, n_bootstrap, seed)
blind_fx = exp.blind_gain_effects(run, n_bootstrap, seed)
ref_fx = exp.ref_gain_effects(run, largest, n_bootstrap, seed)
display(exp.seed_spread(run, n_bootstrap, seed).round(4))
display(exp.effects_table({"AUC gain": gain_fx, "blind gain": blind_fx, "gain(other) - gain(ref)": ref_fx}).round(3))

# %% [markdown]
# (verdicts-ngram-overlap)=
# ## Verdicts
# Each claim gets a {term}`verdict` from the rule printed beside it.

# %%
v = [rules.overlap_is_high(study.exact_overlaps),
     rules.low_overlap_is_easier(gain_fx, shift, largest),
     rules.redraw_drifts_towards_distribution_inference(blind_fx, shift),
     rules.reference_gains_less(ref_fx, shift, largest)]
display(verdicts.publish(v, "ngram_overlap"))
report.glue_values(exp.prose_numbers(study, shift, gain_fx, blind_fx))
glue("largest", largest, display=False)

# %% [markdown]
# **Reading the verdicts.** The lab's non-members overlap its training pool most in
# {glue:text}`max_m7_domain` (mean exact 7-gram overlap {glue:text}`max_m7:.2f`) and least in
# {glue:text}`min_m7_domain` ({glue:text}`min_m7:.2f`): **{glue:text}`verdict_0`**. Of the
# {glue:text}`n_low_domains` domains with a redraw, it lowered the non-members' overlap enough to
# inform the claims in {glue:text}`n_informative`; only those count below. There, the
# low-overlap non-members change the AUC against {glue:text}`largest` by
# {glue:text}`mean_gain:+.3f` on average (**{glue:text}`verdict_1`**), while the blind baseline,
# which never sees a model, changes by {glue:text}`blind_gain:+.3f`
# (**{glue:text}`verdict_2`**): whatever share of the gain the baseline also gets is the
# benchmark changing, not the model leaking. Reference attack gaining less than the others, on
# the paired difference of the gains: **{glue:text}`verdict_3`**. The Bloom filter's mean excess
# over the exact 7-gram overlap was {glue:text}`bloom_excess:.5f` (it is sized for a
# {glue:text}`bloom_fpr_pct:.0f`% false-positive rate per n-gram looked up).
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
