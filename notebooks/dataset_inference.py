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
# # From texts to collections: dataset inference
#
# **The claim** (Maini, Jia, Papernot and Dziedzic {cite:p}`maini2024dataset`, section 5 and
# Figure 4): membership inference on single texts barely works on large language models (the
# [main results](main_results.ipynb) chapter), but an author, a publisher or a data owner asks
# about a *collection*: were **my documents** trained on? **Dataset inference** answers it by
# aggregating several attacks' scores over many texts of a *suspect set* and of a private
# *validation set* from the same distribution, which the model cannot have seen. On the Pile,
# with 1,000 texts per side, it tells Pythia-12B's training subset from the validation subset
# with p < 0.1 in all 20 domains, and it flags none of 20 pairs of validation halves
# ("no false positives"). The paper insists the two sets be IID: "this prevents the results
# from being confounded due to distribution shifts (such as temporal shifts ...)".
# Puerto et al. {cite:p}`puerto2025scaling` show the same kind of aggregation succeeding at
# document and collection scale.
#
# **What the lab does.** Every text of the lab's benchmarks gets the paper's features that the
# book's attacks compute ({glue:text}`di_n_features` of them, from the signal cache: no new
# forward pass): LOSS, zlib, Min-K% at seven k, and the reference ratio. Then, for each one-epoch
# target and domain, the test runs on {glue:text}`di_draws` random draws of three kinds:
# **members** as the suspect set against non-members (power), **non-members against other
# non-members** (a null that holds exactly: the lab knows no text of either was trained on),
# and **same-period non-members against later ones** (the [temporal shift](temporal_shift.ipynb)
# chapter's split: the IID assumption broken, the model again never saw the suspect set).

# %% tags=["parameters", "hide-input"]
profile = "lab"  # which embedded lab to build and read: "smoke" (tiny, for tests) or "lab" (the book's default); "paper" needs models, reference_models and benchmark_source
draw = None  # the lab's draw: None reads the profile's lab; N, the lab drawn with seed N (its splits, selection, initialisation, data order), built if missing; set by mimir-run --draw N
models = None  # target models by hub name or local path, smallest first; None means the lab's one-epoch suite
revision = None  # revision of the target models, e.g. "step99000" for Pythia checkpoints; None means the default branch
reference_models = None  # reference models by hub name or local path (the first gives the 'ref' feature); None means the lab's
benchmark_source = None  # a folder of MIMIR-schema benchmarks or a local copy of the MIMIR dataset repo; None means the lab's
domains = None  # domains (MIMIR configs) to test, e.g. ["code", "math"]; None means every domain of the lab
split = "ngram_13_0.8"  # benchmark split whose members are the suspect set and whose non-members the validation set
features = None  # features (mimirlib.core.dataset_inference.FEATURES), e.g. ["loss", "zlib"]; None means all
sizes = [10, 25, 50, 75, 100, 150]  # suspect-set sizes to test (texts per side; the validation set has as many)
n_draws = 100  # random draws of texts per (model, domain, size, scenario)
n_partitions = 10  # random A/B partitions per test, combined by the paper's Eq. 2 (the paper: 10)
n_samples = None  # cap on members (and non-members) per domain; None means all the benchmark holds
shift_domain = None  # domain of the temporal scenario; None means the lab's dated domain
shift_split = None  # split whose non-members are the later ones; None means the lab's latest bin
seed = 0  # seed for the draws and the partitions
batch_size = 16  # windows per forward pass (only texts missing from the signal cache are scored)
dtype = "auto"  # model weights' dtype: "auto" (float32 on CPU, bfloat16 on GPU), "fast" (bfloat16 where native), "float32", "bfloat16"
engine = "local"  # where forward passes run: "local" (this process) or "ray" (see the Running at scale page)
ray_address = None  # the Ray cluster to join when the engine is "ray"; None starts a local one (or joins $RAY_ADDRESS)
ray_workers = None  # Ray workers, each loading a model once; None: one per GPU of the cluster (one per CPU without GPUs)
ray_gpus_per_worker = None  # GPUs each Ray worker holds; None: 1 on a cluster with GPUs, else 0 (0.5 puts two workers on one GPU)
ray_timeout = None  # seconds a named Ray head has to answer; None: 8 (a wrong address stops the chapter in about that time, in one line)

# %% tags=["hide-input"]
from IPython.display import display

from mimirlib import verdicts
from mimirlib.display import plots, report
from mimirlib.experiments import dataset_inference as exp
from mimirlib.runner import saved

p = exp.Params.from_cell(globals())
plots.set_style()

# %%
run = exp.run(p)
print(run.cache_note)
report.glue_values(exp.prose_numbers(run))

# %% tags=["remove-cell"]
saved.keep(exp, p, run=run)  # for the handouts: mimirlib.runner.saved

# %% [markdown]
# ## How the test works
# Both sets are split at random into halves A and B. On A, a linear regression learns to output 0
# for suspect texts and 1 for validation texts from their features; on B, a one-sided t-test asks
# whether the suspect texts' outputs are lower. The paper repeats this over
# {glue:text}`di_partitions` random partitions and combines the p-values by its Eq. 2:
#
# ```{literalinclude} /mimirlib/core/dataset_inference.py
# :pyobject: one_partition
# ```
#
# ```{literalinclude} /mimirlib/core/dataset_inference.py
# :pyobject: combine
# ```
#
# Two properties of this design matter below. The regression learns its direction on A, so the
# test flags *any* systematic difference between the sets, member-like or not. And Eq. 2,
# $1 - \prod_i (1 - p_i)$, is never below the largest of the partitions' p-values: it is valid for
# dependent tests, and conservative.
#
# ## Power: how many texts does a collection need?
# The share of draws in which members, as the suspect set, are flagged at p < 0.1, against the
# number of texts per side ({glue:text}`di_draws` draws per domain and size, domains pooled; 95%
# exact intervals). A draw takes its texts at random from a domain's members and non-members, so
# the larger draws share most of their texts: the intervals count draws, not independent
# collections.

# %%
curve = exp.power_curve(run)
fig = plots.plot_metric_vs(curve, x="n", y="share", lo="share_lo", hi="share_hi", hue="model", logx=True, chance=0.1)
report.glue_figure("fig_power", fig)
display(exp.smallest_sizes(run).round(3))

# %% [markdown]
# ```{glue:figure} fig_power
# Share of members-set draws flagged at p < 0.1 against the number of texts per side, one line
# per target size; the dashed line is the test's level, 0.1.
# ```
#
# On {glue:text}`di_largest`, whose best single feature has a per-text {term}`AUC` of
# {glue:text}`di_best_auc:.3f` (domains averaged), the smallest set flagged in at least 90% of draws
# is {glue:text}`di_size_largest`; on {glue:text}`di_smallest_model`, {glue:text}`di_size_smallest`.
# {glue:text}`di_power_reading`. The [RaMIA](ramia.ipynb) chapter's ranges pool many weak signals
# the same way: many samples around one point.
#
# ## False positives, measured exactly
# The same test where the lab knows the answer is "never trained on": non-members against other
# non-members (IID; all targets and domains pooled), and same-period non-members against later ones
# in the dated domain ({glue:text}`di_shift_n` per side at most; all targets pooled).

# %%
display(exp.false_positive_table(run))
fp = exp.flag_rates(run.tests[run.tests.scenario != "members"], ["scenario", "n"])
fig = plots.plot_metric_vs(fp, x="n", y="share", lo="share_lo", hi="share_hi", hue="scenario", logx=True, chance=0.1)
report.glue_figure("fig_false_positives", fig)

# %% [markdown]
# ```{glue:figure} fig_false_positives
# False-positive rate (share of draws flagged at p < 0.1) when the model never saw the suspect
# set: IID validation set, and a validation set from a later period.
# ```
#
# Pooled over every set size, under IID the combined test flags {glue:text}`di_iid_rate:.1%` of draws, and one partition's
# p-value alone {glue:text}`di_iid_first:.1%` (a valid test flags at most 10% at p < 0.1; Eq. 2 is
# meant to stay below that). With a later validation set the combined test flags
# {glue:text}`di_shift_rate:.1%` of draws (one partition: {glue:text}`di_shift_first:.1%`). The test
# only asks whether the sets differ in the direction learned on A, so it cannot tell "trained on"
# from "older": whatever share of draws it flags here, each is a false positive. The verdicts below
# decide both rates against the test's level.
#
# ## Which features carry the signal
# The regression's mean weight per feature at the largest members set (negative pulls a text
# toward "suspect", i.e. member-like; features are standardised, so weights compare), beside each
# feature's per-text AUC on {glue:text}`di_largest`. Features are strongly correlated (Min-K% at
# neighbouring k, LOSS), so a weight says what the regression used, not what a feature knows alone.

# %%
display(exp.weights_table(run))
display(exp.best_text_auc(run).round(3))

# %% [markdown]
# (verdicts-dataset-inference)=
# ## Verdicts
# Each verdict is decided by a rule in `mimirlib.verdicts.dataset_inference` on the draws above.

# %%
display(verdicts.publish(exp.verdicts(run), "dataset_inference"))

# %% [markdown]
# ## Re-run it
# ```bash
# .venv/bin/python -m mimirlib.runner dataset_inference -p sizes='[25, 100]' -p n_draws=200
# .venv/bin/python -m mimirlib.runner dataset_inference --list-params
# .venv/bin/python -m mimirlib.audit --model ./my-model --suspect mine.jsonl --validation unpublished.jsonl
# ```
# The last line asks the collection question of any model, without the book (the README's "Audit your
# own model, without the book" describes its report; the [audit](audit.ipynb) chapter audits single texts).
#
# ## Exercises
# Write your prediction down before you open a solution.
#
# :::{exercise} Predict, then run: LOSS alone
# :label: ex-dataset_inference-1
#
# The test aggregates every feature. Predict the share of members sets of 50 texts (or all a domain
# holds, if fewer) it flags on the largest target's first domain with LOSS alone, then run, in a cell at the end of this chapter:
# ```python
# exp.flag_share(run, run.largest, run.domains[0], 50, features=["loss"])
# ```
# :::
#
# :::{solution} ex-dataset_inference-1
# :class: dropdown
#
# LOSS alone flags {glue:text}`ex_loss_only:.0%` of the draws, all the features
# {glue:text}`ex_all_features:.0%` (same draws). The features are correlated (LOSS and Min-K% at
# neighbouring k), so their number overstates what they add, and every extra weight is learned from
# the same half of the texts: more features can help or cost.
# :::
#
# :::{exercise} Change a parameter: one partition
# :label: ex-dataset_inference-2
#
# Run the chapter with a single A/B partition per test:
# ```bash
# .venv/bin/python -m mimirlib.runner dataset_inference -p n_partitions=1
# ```
# What happens to the false-positive rate under IID, and to the power?
# :::
#
# :::{solution} ex-dataset_inference-2
# :class: dropdown
#
# With one partition the p-value is the t-test's own, so under IID it flags
# {glue:text}`di_iid_first:.1%` of draws at the paper's level: near the nominal 10%, no longer far
# below it (a share whose interval lies above 10% says the one-partition test runs hot on these
# texts). Power rises for the same reason.
# Eq. 2 buys validity across dependent partitions at the price of power; the table above shows both
# columns from the same run.
# :::
#
# :::{exercise} Extend the library: the Max-K% feature
# :label: ex-dataset_inference-3
#
# The paper's features include Max-K%: the mean of the *highest* 20% of a text's token
# log-likelihoods (higher means "more likely a member"). Register it as an attack named `max_k`
# with `mimirlib.core.attacks.register(name, label)` as a decorator; the check cell scores it on
# the largest target's texts of the first domain and compares it with the instructor's key.
# :::

# %% tags=["hide-input"]
import mimirlib.core.attacks
from mimirlib.core.models import load_model
from mimirlib.teach import exercises

ex_model, ex_kw = load_model(run.example["model"], dtype=p.dtype), dict(options=p.scoring())
mem, non = run.example["members"], run.example["nonmembers"]
report.glue_values({"ex_domain": run.domains[0],
                    "ex_loss_only": exp.flag_share(run, run.largest, run.domains[0], 50, features=["loss"]),
                    "ex_all_features": exp.flag_share(run, run.largest, run.domains[0], 50),
                    "ex_min_k": exercises.texts_auc(ex_model, mem, non, "min_k", **ex_kw)})

# %% tags=["hide-input", "solution"] nbgrader={"grade": false, "grade_id": "ex-dataset_inference-3-code", "locked": false, "schema_version": 3, "solution": true, "task": false}
import numpy as np

### BEGIN SOLUTION
@mimirlib.core.attacks.register("max_k", "Max-K%")
def max_k(x):
    lp = np.sort(x.target.logprob)
    return float(lp[-max(1, int(0.2 * len(lp))):].mean())
### END SOLUTION

# %% tags=["hide-input", "autocheck"] nbgrader={"grade": true, "grade_id": "ex-dataset_inference-3-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
report.glue_values({"ex_max_k": exercises.check_attack("max_k", ex_model, mem, non, **ex_kw)})

# %% [markdown]
# :::{solution} ex-dataset_inference-3
# :class: dropdown
#
# The solution is the code cell above (click to show it). Max-K% reaches a per-text AUC of
# {glue:text}`ex_max_k:.3f` on these texts, Min-K% {glue:text}`ex_min_k:.3f` (the {glue:text}`ex_domain`
# domain alone: the feature table above averages the domains). Min-K% reads the
# tokens the model finds hardest, Max-K% those it finds easiest; a feature weak on its own can still
# help the regression when it is not a copy of the others.
# :::
#
# ## Self-check quiz
#
# **1.** Why must the validation set be IID with the suspect set?
#
# - (a) Because the test flags any systematic difference between the sets in the direction it
#   learns, member-like or not: a shifted validation set makes an unseen suspect set look trained on.
# - (b) Because the t-test needs equal sample sizes.
#
# :::{dropdown} Answer
# (a). See the false-positive table: the later validation set is the only change.
# :::
#
# **2.** Why is the combined p-value of Eq. 2 never below the partitions' largest p-value?
#
# - (a) Because $1 - \prod_i (1 - p_i) \ge 1 - (1 - p_j)$ for every $j$: it is valid for dependent
#   partitions, and conservative.
# - (b) Because the partitions are independent.
#
# :::{dropdown} Answer
# (a). The partitions share texts, so they are not independent.
# :::
#
# **3.** Every attack's per-text AUC on a model is near 0.5. Can dataset inference still detect a
# collection?
#
# - (a) No: the set-level test cannot beat the per-text signal.
# - (b) Yes, given enough texts: a small shift in the mean score, summed over many texts, becomes
#   significant, as the power figure shows.
#
# :::{dropdown} Answer
# (b).
# :::
