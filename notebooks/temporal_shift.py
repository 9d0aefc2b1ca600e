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
# # Temporal shift: measuring the calendar instead of membership
#
# **The paper's claim** (MIMIR {cite:p}`duan2024mimir` section 4, Tables 3 and 5, Figures 4, 6
# and 8). Several earlier benchmarks (WikiMIA {cite:p}`shi2024detecting`, for one) took
# {term}`members <member>` from before a model's training cutoff and
# {term}`non-members <non-member>` from after it.
# Such non-members differ in *distribution*, not only in membership: they talk about new
# things. "The temporally shifted settings yield MIA performances significantly higher than
# when members and non-members are from the same temporal range" (Table 3: up to 0.796 {term}`AUC`
# against Pythia-dedup-12B on Wikipedia articles from after August 2023, against 0.516-0.579
# on the same-period benchmark of Table 1); "MIA performance generally increases as
# non-members are further temporally shifted" (Figure 6: ArXiv months from 2020-08 to 2023-06,
# 0.723 to 0.795 AUC); the shifted non-members' 7-gram {term}`overlap <n-gram overlap>` with the training data
# "concentrates at lower overlap percentages" (Figures 4 and 8: 39.3% natural against 13.9%
# on Wikipedia, 22.7% and 20.5% on ArXiv; section 3.2.2 of the same paper gives Wikipedia's
# natural non-members 32.5% and ArXiv's 39.3%, so one of the two Wikipedia figures is likely a
# slip); and "decision thresholds derived using
# temporally-shifted non-members end up testing for temporal shift rather than membership"
# (Table 5: a threshold at 1% FPR on the shifted data gives 2.5-9.4% FPR on the natural ArXiv
# non-members, 7.5-10.3% on Wikipedia).
#
# **What the lab does.** The lab's dated domain is CPython's changelog: entries dated before
# the cutoff went into the training pool (members are drawn from them); held-out entries of
# the same period are the *natural* non-members; entries from successively later years are
# the *shifted* non-members. Every benchmark takes its members from the front of one list, as
# many as it has non-members (the sizes table), and every comparison between two benchmarks is
# *{term}`paired <paired bootstrap>`* over the members they share, so its difference comes from
# the non-members. Beside every attack sits a
# **{term}`blind baseline`** {cite:p}`das2024blind`, the book's addition (the paper runs none):
# a bag-of-words classifier, cross-validated on the benchmark's texts, that
# never sees the model. When it matches the attacks, the benchmark measures a distribution
# shift that any text classifier can see, and a high AUC says nothing about the model.

# %% tags=["parameters", "hide-input"]
profile = "lab"  # which embedded lab to build and read: "smoke" (tiny, for tests) or "lab" (the book's default); "paper" names real models and data
draw = None  # the lab's draw: None reads the profile's lab; N, the lab drawn with seed N (its splits, selection, initialisation, data order), built if missing; set by mimir-run --draw N
models = None  # target models by hub name or local path, smallest first; None means the lab's one-epoch suite
revision = None  # revision of the target models, e.g. "step99000" for Pythia; None means the default branch
reference_models = None  # reference models by hub name or local path; None means the lab's disjoint-pool reference
benchmark_source = None  # a folder of MIMIR-schema benchmarks, a local copy of the MIMIR dataset repo, or "iamgroot42/mimir"; None means the lab's
domain = None  # the natural benchmark's config (MIMIR: "arxiv"); None means the lab's dated domain (changelog)
natural_split = "ngram_13_0.8"  # split of the natural benchmark: non-members from the same period as the members
shifted_config = None  # config holding the temporally shifted benchmarks (MIMIR: "temporal_arxiv"); None means the same as domain
shifted_splits = None  # shifted splits, oldest first (MIMIR: ["2020_08", "2021_01", ...]); None means the lab's later bins
attacks = ["loss", "ref", "zlib", "min_k", "min_k_pp"]  # attacks to run (see mimirlib.core.attacks.ATTACKS)
min_k = 0.2  # k for Min-K% and Min-K%++
n_samples = None  # cap on members (and non-members) per benchmark; None means all
fpr_targets = [0.01, 0.05, 0.1]  # FPRs on the shifted benchmark that set the thresholds of Table 5
blind_folds = 5  # cross-validation folds of the model-free baseline
overlap_n = 7  # n of the word n-gram overlap compared between natural and shifted non-members (Figures 4 and 8)
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

from mimirlib import verdicts
from mimirlib.display import plots, report
from mimirlib.display.paper_tables import paper_table
from mimirlib.experiments import temporal_shift as exp
from mimirlib.runner import saved

p = exp.Params.from_cell(globals())
plots.set_style()

# %% [markdown]
# ## Scoring, and the blind baseline
# Every target (and every seed replicate the lab trained of it) is scored on every benchmark;
# the members' signals are computed once and read from the cache afterwards. The baseline's
# AUC is out-of-fold: each text is scored by a classifier trained on the other folds. The
# baseline is this classifier, fitted anew on each fold's training texts:
#
# ```{literalinclude} /mimirlib/core/baselines.py
# :pyobject: blind_classifier
# ```

# %%
run = exp.run(p)
display(run.benchmarks.sizes())
print(run.cache_note)

# %% tags=["remove-cell"]
saved.keep(exp, p, run=run)  # for the handouts: mimirlib.runner.saved

# %% [markdown]
# ## Table 3 analogue: AUC with natural versus shifted non-members
# Rows: target model; columns: attack, for the natural benchmark and the latest shifted one.
# The blind baseline does not depend on the model (the column before the sample sizes). Each
# block is scored on its own texts; the verdicts compare two blocks on the members they share.

# %%
display(exp.table3(run.scored).round(3))

# %% [markdown]
# The paper's Table 3 (Pythia-dedup on the temporally shifted Wikipedia benchmark, AUC):

# %%
display(paper_table("mimir", "3"))

# %% [markdown]
# The verdict reads the change itself: AUC on the latest benchmark minus AUC on the natural
# one, per target and attack, with a 95% {term}`bootstrap interval` that resamples the shared members
# jointly and each non-member set on its own (columns: attack).

# %%
display(exp.differences_view(run.gains))

# %% [markdown]
# Where the lab trained several seeds of a target, the seed-to-seed spread of its AUC (the
# {term}`seed sd`, median over attacks) stands beside the bootstrap half-width. The bootstrap
# interval says which texts
# were drawn; two benchmarks compared on the same members differ by much less than it
# suggests, and a difference counts only if it also exceeds twice the seed spread.

# %%
display(report.words(exp.seed_spread(run.scored).set_index(["target", "benchmark"]).round(4)))

# %% [markdown]
# ## Figure 6 analogue: AUC as the non-members get later
# The largest target; one line per attack, the black line is the blind baseline; bars are 95%
# bootstrap intervals.

# %%
fig = plots.plot_metric_vs(exp.auc_curve(run.scored), x="benchmark", hue="attack",
                           title=f"{run.largest}: natural non-members, then later ones")
report.glue_figure("fig_shift", fig)

# %% [markdown]
# ```{glue:figure} fig_shift
# AUC of each attack (and of the model-free baseline) against the largest target, as the
# non-members move from the training period to later years.
# ```
#
# The trend is decided on the paired change from the earliest shifted benchmark to the latest,
# per target and attack:

# %%
display(exp.differences_view(run.trend) if len(run.trend) else "a single shifted benchmark: no trend to read")

# %% [markdown]
# ## Figures 4 and 8 analogue: n-gram overlap of natural versus shifted non-members
# The fraction of each non-member's word n-grams found in the training data (the lab's whole
# training pool; on real data, the benchmark's members stand in for it), and the drop of the
# mean from the natural non-members to each shifted set, with a 95% bootstrap interval.

# %%
fig = plots.plot_score_ecdf(run.overlaps, xlabel=f"{p.overlap_n}-gram overlap with the training data",
                            title="non-members: natural vs later-dated")
report.glue_figure("fig_overlap", fig)
display(report.words(run.drops.set_index("benchmark").round(4)))

# %% [markdown]
# ```{glue:figure} fig_overlap
# Cumulative distribution of the {glue:text}`overlap_n`-gram overlap of natural and shifted
# non-members: the share of each set's texts with at most a given overlap (a curve that rises
# earlier means less overlap). The paper draws histograms; where many texts share almost no
# n-gram with the training data, as later-dated ones can, a histogram's spike at zero hides the
# rest of the distribution, which a cumulative curve does not.
# ```
#
# ## Table 5 analogue: thresholds set on shifted data, applied to real non-members
# For each shifted benchmark and attack, the threshold that gives the target FPR (see
# {term}`ROC curve`) on that
# benchmark's (shifted) non-members; the table shows the FPR that the same threshold gives on
# the natural non-members, in %. Above the target means the threshold was tuned to the calendar,
# but chance moves the cell twice: the threshold is itself estimated from a small shifted set, and
# {glue:text}`n_natural` natural non-members are few. The verdict asks how many natural
# non-members would exceed the threshold if the two sets came from one distribution (an exact
# exchangeability test, which counts both), and calls a cell above the target only when
# fewer than one draw in forty would give its count by chance.

# %%
display(exp.table5_view(run.t5).round(1))

# %% [markdown]
# The paper's Table 5 (Pythia-dedup-12B, FPR % on the natural Pile non-members):

# %%
display(paper_table("mimir", "5"))

# %% [markdown]
# (verdicts-temporal-shift)=
# ## Verdicts
# Each claim gets a {term}`verdict` from the rule printed beside it. The claims about the attacks
# count MIMIR's attacks; Min-K%++, which came after the paper, is shown beside them in the evidence.

# %%
display(verdicts.publish(exp.verdicts(run), "temporal_shift", exp.regime(run)))
report.glue_values(run.prose_numbers())

# %% [markdown]
# **Reading the verdicts.** Moving the non-members from the training period to
# {glue:text}`latest` changes the AUC by {glue:text}`gain_median:+.3f` (median over targets and
# MIMIR's attacks, **{glue:text}`verdict_0`**). From the earliest shifted benchmark,
# {glue:text}`earliest`, to the latest, the median change is {glue:text}`trend_median:+.3f`
# (**{glue:text}`verdict_1`**). The mean {glue:text}`overlap_n`-gram overlap with the training
# data falls from {glue:text}`overlap_natural:.1f`% for the natural non-members to
# {glue:text}`overlap_latest:.1f`% for the latest ones (**{glue:text}`verdict_2`**). A threshold
# set at {glue:text}`budget_min:.0f`% FPR on shifted non-members flags a median
# {glue:text}`fpr_min_budget_median:.1f`% of the natural ones (**{glue:text}`verdict_3`**).
# The model-free baseline reaches AUC {glue:text}`blind_latest:.3f` on the latest bin (versus
# {glue:text}`blind_nat:.3f` on the natural benchmark), against {glue:text}`best_latest:.3f`
# for the best attack on {glue:text}`largest`, {glue:text}`best_attack`
# (**{glue:text}`verdict_4`**, the book's own finding). A lab changelog entry names the Python
# versions and modules of its year, which a bag of words picks up at once; the lab's tiny
# models see the same cues. Where the baseline is as good as the attacks, a high AUC on a
# time-split benchmark is a statement about the benchmark, which is the paper's point.
#
# ## Re-run it differently
# ```bash
# .venv/bin/python -m mimirlib.runner temporal_shift -p overlap_n=13 -p 'attacks=[loss, min_k]'
# .venv/bin/python -m mimirlib.runner temporal_shift --list-params
# ```
# **With the paper's data** (network, the gated MIMIR dataset, a GPU for the larger Pythia
# models): `--profile paper` compares `arxiv` / `ngram_13_0.8` with the seven monthly splits
# of `temporal_arxiv`, on the Pythia-dedup suite at `step99000` (`mimirlib/profiles/paper.yml`).

# %% [markdown]
# ## Exercises
# Every exercise works on this chapter's own models and texts: what it needs is already in the
# signal cache, so it adds no forward pass. Write your prediction down before you open a solution.
#
# :::{exercise} Predict, then run: Min-K% at k = 5% against later non-members
# :label: ex-temporal_shift-1
#
# Against the largest target, predict Min-K%'s AUC at k = 5% with the natural non-members and
# with the latest ones ({glue:text}`ex_latest`): will the shift still inflate it? Then run
# ```bash
# .venv/bin/python -m mimirlib.runner temporal_shift -p min_k=0.05
# ```
# and read Min-K%'s column of the Table 3 analogue.
# :::
#
# :::{solution} ex-temporal_shift-1
# :class: dropdown
#
# On this run's cached signals, Min-K% at k = 5% has AUC {glue:text}`ex_mink_nat:.3f` with the
# natural non-members and {glue:text}`ex_mink_late:.3f` with the {glue:text}`ex_latest` ones.
# Later texts talk about later things (new versions, new names): their least likely tokens are
# unlikely because the model never saw that vocabulary, whether or not it saw similar texts. The
# shift inflates any attack that keys on surprising tokens, which is why the chapter calls it
# measuring the calendar.
# :::
#
# :::{exercise} Change a parameter: longer n-grams
# :label: ex-temporal_shift-2
#
# The overlap figures compare {glue:text}`overlap_n`-gram overlaps of natural and later
# non-members with the training data. Re-run with 13-grams:
# ```bash
# .venv/bin/python -m mimirlib.runner temporal_shift -p overlap_n=13
# ```
# Do you expect the drop in overlap to grow or shrink?
# :::
#
# :::{solution} ex-temporal_shift-2
# :class: dropdown
#
# Longer n-grams are rarer, so both overlaps fall towards zero and their difference usually
# shrinks in absolute terms; the paired drop's interval tells whether it is still clear. Nothing
# else moves: the attacks do not depend on `overlap_n`.
# :::
#
# :::{exercise} Extend the library: a percentile-of-tokens attack
# :label: ex-temporal_shift-3
#
# Register an attack named `token_percentile` whose score is the 10th percentile of the text's
# token log-likelihoods (`numpy.percentile(x.target.logprob, 10)`; higher means "more likely a
# member") with `mimirlib.core.attacks.register(name, label)` as a decorator. The check cell scores it
# on the latest shifted benchmark ({glue:text}`ex_latest`) against the largest target and compares
# it with the instructor's key. Is it inflated by the shift as much as LOSS?
# :::

# %% tags=["hide-input"]
import mimirlib.core.attacks
from mimirlib.teach import exercises

b = run.benchmarks
ex_target, ex_kw = b.suite.model(b.suite.targets[-1]), dict(options=p.scoring())
ex_nat, ex_late = b.benches[b.order[0]], b.benches[b.order[-1]]
report.glue_values({"ex_latest": b.order[-1],
                    "ex_mink_nat": exercises.texts_auc(ex_target, ex_nat.members, ex_nat.nonmembers, "min_k", k=0.05, **ex_kw),
                    "ex_mink_late": exercises.texts_auc(ex_target, ex_late.members, ex_late.nonmembers, "min_k", k=0.05, **ex_kw),
                    "ex_loss_late": exercises.texts_auc(ex_target, ex_late.members, ex_late.nonmembers, "loss", **ex_kw)})

# %% tags=["hide-input", "solution"] nbgrader={"grade": false, "grade_id": "ex-temporal_shift-3-code", "locked": false, "schema_version": 3, "solution": true, "task": false}
import numpy as np

### BEGIN SOLUTION
@mimirlib.core.attacks.register("token_percentile", "10th percentile of tokens")
def token_percentile(x):
    return float(np.percentile(x.target.logprob, 10))
### END SOLUTION

# %% tags=["hide-input", "autocheck"] nbgrader={"grade": true, "grade_id": "ex-temporal_shift-3-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
report.glue_values({"ex_pct_late": exercises.check_attack("token_percentile", ex_target, ex_late.members, ex_late.nonmembers, **ex_kw)})

# %% [markdown]
# :::{solution} ex-temporal_shift-3
# :class: dropdown
#
# The solution is the code cell above (click to show it). On the {glue:text}`ex_latest` benchmark
# it reaches AUC {glue:text}`ex_pct_late:.3f`, LOSS {glue:text}`ex_loss_late:.3f` on the same
# texts. Compare LOSS's with its natural-benchmark AUC in the Table 3 analogue (the new attack has
# none there: it is scored on the shifted texts only). One might expect an attack that rests on a
# text's most surprising tokens to be exposed to new vocabulary at least as much as one that
# averages every token; Min-K%'s column beside LOSS's in the Table 3 analogue says whether it is.
# :::
#
# :::{exercise} Change a parameter: stricter thresholds
# :label: ex-temporal_shift-4
#
# Table 5 sets its thresholds on the shifted benchmark at the FPRs of `fpr_targets`. Re-run with
# 0.1% and 1%:
# ```bash
# .venv/bin/python -m mimirlib.runner temporal_shift -p 'fpr_targets=[0.001, 0.01]'
# ```
# What limits the 0.1% row?
# :::
#
# :::{solution} ex-temporal_shift-4
# :class: dropdown
#
# With n non-members the smallest FPR a threshold can resolve is 1/n (the
# {term}`smallest resolvable FPR`): below it the threshold is the largest non-member score, and
# the "FPR" is really 0. Check the benchmark sizes in the first table of the chapter: unless there
# are a thousand non-members, the smallest budget's row is set at FPR 0, and the FPR it yields on the natural
# non-members says more about the shift than about the budget.
# :::
#
# ## Self-check quiz
#
# **1.** Why can a temporally shifted benchmark inflate AUC without any membership signal?
#
# - (a) Later texts differ in topic and vocabulary, so they look unlike the training data whether
#   or not the model memorised anything.
# - (b) The target model was trained on later texts.
# - (c) Shifted benchmarks have more members.
#
# :::{dropdown} Answer
# (a). The blind baseline, which sees no model, separates them too (see the verdicts).
# :::
#
# **2.** A threshold set to flag 1% of shifted non-members is applied to natural non-members. What
# happens?
#
# - (a) It flags 1% of them too.
# - (b) It can flag many more, because natural non-members resemble the training data more than
#   the shifted ones: the Table 5 analogue measures how many.
# - (c) It flags none.
#
# :::{dropdown} Answer
# (b).
# :::
#
# **3.** What does the overlap figure compare?
#
# - (a) Members with non-members.
# - (b) The n-gram overlap with the training data of natural non-members and of later-dated ones.
#
# :::{dropdown} Answer
# (b). Lower overlap for later texts is the paper's evidence of a distribution shift.
# :::
