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
# # Epochs: does training longer on the same data leak more?
#
# **The paper's claim** (MIMIR {cite:p}`duan2024mimir` section 3.2.1, Figure 2 right): on the
# Datablations models {cite:p}`muennighoff2023scaling`, trained with a fixed compute budget as
# more epochs over proportionally smaller subsets of C4 {cite:p}`raffel2020t5`, "increasing the
# number of {term}`effective epochs` corresponds to an increase in attack performance"
# ("performance increases linearly with the number of effective epochs"); appendix B.2 adds
# that {term}`reference-based attacks <reference attack>` yield "considerably higher MIA
# performance" in the high effective epoch count setting, read here as higher than each of MIMIR's
# other attacks there (zlib, though calibrated too, included). On SILO {cite:p}`min2023silo`
# (appendix C.2, Figure 10), where some small
# domains are upsampled and the training data grows with their effective epochs, the trend does
# *not* simply hold: for HackerNews performance first increases, then "begins to plateau or even
# drop", and for DM Mathematics it "surprisingly drops with increasing effective epochs".
#
# **What the lab does.** The Datablations design in miniature: models of one size, each trained
# on the same token budget, spent as 1, 2, 4, ... epochs over a subset of 1, 1/2, 1/4, ... of the
# budget's documents; every subset contains the same {term}`members <member>`, so the members
# are seen once, twice, four times... {term}`Non-members <non-member>` are held-out documents
# (13-gram overlap <= 80%, the paper's {term}`decontamination`). Every run is scored on the same
# texts, so two runs are compared text by text (a {term}`paired bootstrap`).

# %% tags=["parameters", "hide-input"]
profile = "lab"  # which embedded lab to read: "smoke" (tiny, for tests) or "lab" (the book's default)
draw = None  # the lab's draw: None reads the profile's lab; N, the lab drawn with seed N (its splits, selection, initialisation, data order), built if missing; set by mimir-run --draw N
attacks = ["loss", "ref", "zlib", "min_k", "min_k_pp"]  # attacks to run (see mimirlib.core.attacks.ATTACKS)
min_k = 0.2  # k for Min-K% and Min-K%++
n_samples = None  # cap on members (and non-members) per domain; None means all the epochs benchmark holds
n_bootstrap = 1000  # bootstrap resamples for AUC intervals
seed = 0  # seed for the bootstrap
batch_size = 16  # windows per forward pass
dtype = "auto"  # weights' dtype when scoring: "auto" (float32 on CPU, bfloat16 on GPU), "fast" (bfloat16 where native), "float32", "bfloat16"
engine = "local"  # where forward passes run: "local" (this process) or "ray" (workers on a Ray cluster: a local one, or the one $RAY_ADDRESS names; see the Running at scale page)
ray_address = None  # the Ray cluster to join when the engine is "ray": "auto", "host:port" or "ray://host:port"; None starts a local one (or joins the one $RAY_ADDRESS names)
ray_workers = None  # Ray workers, each loading a model once; None: one per GPU of the cluster (one per CPU without GPUs)
ray_gpus_per_worker = None  # GPUs each Ray worker holds; None: 1 on a cluster with GPUs, else 0 (0.5 puts two workers on one GPU)
ray_timeout = None  # seconds a named Ray head has to answer; None: 8 (a wrong address stops the chapter in about that time, in one line)

# %% tags=["hide-input"]
from IPython.display import display
from myst_nb import glue

from mimirlib import verdicts
from mimirlib.display import plots, report
from mimirlib.experiments import epochs as exp
from mimirlib.experiments import silo as silo_exp
from mimirlib.runner import saved

p = exp.Params.from_cell(globals())
plots.set_style()

# %%
run = exp.run(p)
print(run.cache_note)

# %% tags=["remove-cell"]
saved.keep(exp, p, run=run)  # for the handouts: mimirlib.runner.saved

# %% tags=["hide-input"]
glue("n_members", run.n_members, display=False)
glue("n_domains", len(run.domains), display=False)
glue("budget_mtok", run.budget_tokens / 1e6, display=False)
glue("most_epochs", run.most, display=False)
glue("seed_proxy", run.seed_models[0] if run.seed_models else "none", display=False)
glue("n_seed_proxy", len(run.seed_models), display=False)

# %% [markdown]
# ## AUC versus effective epochs (Figure 2 right)
# The {term}`AUC` of each attack against each run: {glue:text}`n_members` members and as many
# non-members in each of {glue:text}`n_domains` domains, pooled in the figure; each run saw about
# {glue:text}`budget_mtok:.2f`M tokens.

# %%
fig = plots.plot_metric_vs(run.pooled, x="epochs", hue="attack", logx=True)
report.glue_figure("fig_epochs", fig)
display(exp.auc_pivot(run))

# %% [markdown]
# ```{glue:figure} fig_epochs
# AUC of each attack against models trained for more epochs over smaller subsets at a fixed
# token budget (x: epochs, log scale), domains pooled; bars are 95%
# {term}`bootstrap intervals <bootstrap interval>` over the texts.
# ```
#
# ## The gain per domain, paired
# For each domain and attack: the AUC of the run with the most epochs
# ({glue:text}`most_epochs`) minus that of the 1-epoch run, with a 95% *paired* bootstrap
# interval (both runs scored on the same resampled texts, so which texts were drawn cancels
# out). The two runs compared have one training seed each; the {term}`seed sd` beside it is borrowed from the
# {glue:text}`n_seed_proxy` seed replicates of {glue:text}`seed_proxy` (a one-epoch target of
# the same size, same texts), x sqrt(2) for a difference of two trained models. Use the paired
# interval and the seed sd to judge a gain; the per-run bootstrap bands in the figure above
# answer a different question (how the AUC of one run would move on other texts).
#
# The paired bootstrap draws one set of member and one set of non-member indices per resample and
# scores both runs on them, so the difference is taken on the same texts every time:
#
# ```{literalinclude} /mimirlib/core/metrics.py
# :pyobject: paired_auc_difference
# ```

# %%
display(exp.gains_table(run))

# %% [markdown]
# ## A SILO-style run (Figure 10)
# SILO upsamples its small domains (under 5% of the data) 3x and trains several epochs, so the
# training data grows with those domains' effective epochs; the paper reads the intermediate
# checkpoints. The lab's counterpart: the epochs benchmark's members of {glue:text}`silo_domains`,
# repeated {glue:text}`silo_upsample` times per epoch inside the whole pool of the other domains
# (shares of the documents: {glue:text}`silo_shares`), one model trained {glue:text}`silo_epochs`
# epochs and read at every half epoch. A checkpoint's {term}`effective epochs` are counted from the
# recorded data order: how many times the domain's members had been trained on, on average (at the
# epoch ends: {glue:text}`silo_ends`). The verdict compares the checkpoints closest to the epoch
# ends on the same texts; the run has one training seed, so its seed sd is imputed (below).

# %% tags=["hide-input"]
report.glue_values(silo_exp.glue_values(run.silo))
report.glue_figure("fig_silo", silo_exp.figure(run.silo))
display(silo_exp.effects_table(run.silo))

# %% [markdown]
# ```{glue:figure} fig_silo
# AUC of each attack against the upsampled domains' effective epochs, one line per domain, at every
# checkpoint from half the first epoch on; bands are 95% {term}`bootstrap intervals <bootstrap interval>`
# over the texts. The table gives the AUC at the first, second and last epoch ends, the early change,
# the bend (the last epoch's change minus the first one's, over as many effective epochs) and the whole
# change, each paired on the same texts with its 95% interval.
# ```
#
# (verdicts-epochs)=
# ## Verdicts
# Each claim gets a {term}`verdict` from the rule printed beside it.

# %%
display(verdicts.publish(exp.verdicts(run), "epochs", exp.regime(run)))
glue("mean_gain", float(verdicts.split_paper_attacks(run.gains)[0].estimate.mean()), display=False)
glue("gain_attacks", ", ".join(verdicts.split_paper_attacks(run.gains)[0].attack.unique()), display=False)

# %% [markdown]
# **Reading the verdicts.** More epochs, more leakage: **{glue:text}`verdict_0`** (mean paired
# AUC gain {glue:text}`mean_gain:+.3f` from the 1-epoch run to the
# {glue:text}`most_epochs`-epoch run, over domains and the MIMIR attacks this run scores,
# {glue:text}`gain_attacks`; Min-K%++, which came
# after the paper, is shown beside and not counted in either claim); the reference attack against
# each of MIMIR's other attacks on the {glue:text}`most_epochs`-epoch run, paired per domain
# (how much the reference
# attack's margin grew since one epoch is reported as support): **{glue:text}`verdict_1`**; the
# SILO upsampling result, read on the SILO-style run above: **{glue:text}`verdict_2`**.
# A comparison at the AUC ceiling is out of both claims' regime and is listed, not counted: where
# the other attack already scores above 0.99, the reference attack cannot be one AUC point higher;
# where a linear rise would pass AUC 1 before the last epoch, the plateau is forced, not found.
# The paper states the Datablations trend in words and shows it in a figure without a table;
# each lab run's budget is {glue:text}`budget_mtok:.2f`M tokens, so even one epoch over its small
# subset is much less diluted than one epoch of C4.
#
# ## Re-run it differently
# Another attack list or sample size reuses every cached signal (the scoring cell reports
# how many texts came from the cache):
# ```bash
# .venv/bin/python -m mimirlib.runner epochs -p 'attacks=[loss, zlib]' -p n_samples=10
# ```
#
# **With the paper's models.** There is no `paper` profile: the Datablations models and their
# C4 subsets are not reachable offline, and which documents each run repeated is exactly what
# the lab's recorded data order provides.

# %% [markdown]
# ## Exercises
# Every exercise works on this chapter's own models and texts: what it needs is already in the
# signal cache, so it adds no forward pass. Write your prediction down before you open a solution.
#
# :::{exercise} Predict, then run: Min-K% at k = 5% after many epochs
# :label: ex-epochs-1
#
# The run trained {glue:text}`most_epochs` epochs ({glue:text}`ex_model`) has seen each member many
# times. Predict Min-K%'s AUC against it, all domains pooled, at k = 5% instead of
# k = {glue:text}`ex_k_chapter`: closer to 1, lower, or the same? Then run
# ```bash
# .venv/bin/python -m mimirlib.runner epochs -p min_k=0.05
# ```
# :::
#
# :::{solution} ex-epochs-1
# :class: dropdown
#
# On this run's cached signals, Min-K% against {glue:text}`ex_model` (domains pooled) has AUC
# {glue:text}`ex_mink_chapter:.3f` at k = {glue:text}`ex_k_chapter` and
# {glue:text}`ex_mink_small:.3f` at k = 5%. A smaller k averages only the few least likely tokens of
# each text. After many epochs even those tokens of a member are predicted well, while a
# non-member's least likely tokens stay very unlikely: the tail is where the two differ most, so a
# smaller k can gain even though it averages fewer tokens (noisier). Which effect wins is read off
# the two numbers, not assumed; compare the change with the spread of the bootstrap intervals in
# this chapter's table before calling it real.
# :::
#
# :::{exercise} Change a parameter: ten texts per domain
# :label: ex-epochs-2
#
# Re-run with ten members and ten non-members per domain:
# ```bash
# .venv/bin/python -m mimirlib.runner epochs -p n_samples=10
# ```
# What happens to the paired gains and to the verdicts?
# :::
#
# :::{solution} ex-epochs-2
# :class: dropdown
#
# The gains per domain keep roughly their size (the models are the same), but their paired
# intervals widen with fewer texts, and per domain an AUC moves in steps of 1/200 (ties count half). Where
# a gain's interval now reaches zero, the verdict's rule counts that domain as not clear; compare
# "The gain per domain, paired" with this page's.
# :::
#
# :::{exercise} Extend the library: the median token log-likelihood
# :label: ex-epochs-3
#
# LOSS is the mean token log-likelihood. Register an attack named `median_logprob` that uses the
# median instead (`numpy.median` of `x.target.logprob`; higher means "more likely a member") with
# `mimirlib.core.attacks.register(name, label)` as a decorator. The check cell scores it against
# {glue:text}`ex_model` on this chapter's texts (domains pooled) and compares it with the
# instructor's key. Is it more or less separating than LOSS?
# :::

# %% tags=["hide-input"]
import mimirlib.core.attacks
from mimirlib.teach import exercises
from mimirlib.core.models import load_model

ex_model = load_model(str(run.lab.model_dir(run.runs[-1])), dtype=p.dtype)
ex_texts, ex_kw = (ex_model, *exercises.pooled_texts(exp.benchmarks(run.lab, p.n_samples))), dict(options=p.scoring())
report.glue_values({"ex_model": run.runs[-1], "ex_k_chapter": f"{p.min_k:.0%}", "ex_loss": exercises.texts_auc(*ex_texts, "loss", **ex_kw),
                    "ex_mink_chapter": exercises.texts_auc(*ex_texts, "min_k", k=p.min_k, **ex_kw),
                    "ex_mink_small": exercises.texts_auc(*ex_texts, "min_k", k=0.05, **ex_kw)})

# %% tags=["hide-input", "solution"] nbgrader={"grade": false, "grade_id": "ex-epochs-3-code", "locked": false, "schema_version": 3, "solution": true, "task": false}
import numpy as np

### BEGIN SOLUTION
@mimirlib.core.attacks.register("median_logprob", "Median log-likelihood")
def median_logprob(x):
    return float(np.median(x.target.logprob))
### END SOLUTION

# %% tags=["hide-input", "autocheck"] nbgrader={"grade": true, "grade_id": "ex-epochs-3-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
report.glue_values({"ex_median": exercises.check_attack("median_logprob", *ex_texts, **ex_kw)})

# %% [markdown]
# :::{solution} ex-epochs-3
# :class: dropdown
#
# The solution is the code cell above (click to show it). Against {glue:text}`ex_model` the median
# reaches AUC {glue:text}`ex_median:.3f`, LOSS {glue:text}`ex_loss:.3f` on the same texts. The
# median ignores the few very surprising tokens that dominate a mean loss; after many epochs
# those are exactly the tokens a member has learnt, so whether ignoring them helps is what the
# two numbers tell you.
# :::
#
# ## Self-check quiz
#
# **1.** The epoch runs all see the same number of tokens. Why a fixed budget?
#
# - (a) To save time.
# - (b) So that more epochs means the same members repeated more often, not more training in
#   total: the comparison isolates repetition.
# - (c) Because the paper's models were trained with a fixed budget of epochs.
#
# :::{dropdown} Answer
# (b). See the chapter's introduction: every run's budget is the same number of tokens.
# :::
#
# **2.** "AUC near 0.5 means the model memorised nothing." True?
#
# - (a) True.
# - (b) False: an attack's AUC measures how well that attack separates these members from these
#   non-members; the same members can be separated well once the model has seen them more often,
#   as this chapter's curve shows.
#
# :::{dropdown} Answer
# (b). Compare the one-epoch end of the figure with the most-epochs end (the gain table gives the
# paired difference per domain).
# :::
#
# **3.** The most-epochs run's AUC interval lies well above 0.5. What does that say about a
# one-epoch Pythia model?
#
# - (a) That it leaks as much.
# - (b) Nothing directly: the many-epoch run saw few documents many times; a one-epoch model on
#   huge data sits at the other end of this chapter's curve.
#
# :::{dropdown} Answer
# (b). The figure's x axis is effective epochs; the paper's targets sit at its left end.
# :::
