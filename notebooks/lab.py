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
# # The embedded lab: a miniature Pile and a Pythia-like suite
#
# The MIMIR paper {cite:p}`duan2024mimir` attacks Pythia models {cite:p}`biderman2023pythia`
# (160M to 12B parameters) trained on the Pile {cite:p}`gao2020pile`, using benchmarks drawn from
# the Pile's train ({term}`members <member>`) and test ({term}`non-members <non-member>`) splits.
# None of that can be downloaded
# here, so the book builds a miniature of it: a corpus of six domains made from text that
# ships offline, and GPT-NeoX models (Pythia's architecture) trained from scratch on CPU.
# Because the lab trains the models itself, it records **which document each model saw, at
# which step and how many times**: the ground truth the paper could only approximate.
# Everything on this page is read from the lab build that the book's chapters use.

# %% tags=["parameters", "hide-input"]
profile = "lab"  # which embedded lab to build and describe: "smoke" (tiny, for tests) or "lab" (the book's default)
draw = None  # the lab's draw: None reads the profile's lab; N, the lab drawn with seed N (its splits, selection, initialisation, data order), built if missing; set by mimir-run --draw N
dtype = "auto"  # weights' dtype when scoring: "auto" (float32 on CPU, bfloat16 on GPU), "fast" (bfloat16 where native), "float32", "bfloat16"
engine = "local"  # where forward passes run: "local" (this process) or "ray" (workers on a Ray cluster: a local one, or the one $RAY_ADDRESS names; see the Running at scale page)
ray_address = None  # the Ray cluster to join when the engine is "ray": "auto", "host:port" or "ray://host:port"; None starts a local one (or joins the one $RAY_ADDRESS names)
ray_workers = None  # Ray workers, each loading a model once; None: one per GPU of the cluster (one per CPU without GPUs)
ray_gpus_per_worker = None  # GPUs each Ray worker holds; None: 1 on a cluster with GPUs, else 0 (0.5 puts two workers on one GPU)
ray_timeout = None  # seconds a named Ray head has to answer; None: 8 (a wrong address stops the chapter in about that time, in one line)

# %% tags=["hide-input"]
from IPython.display import display

from mimirlib import verdicts
from mimirlib.display import plots, report
from mimirlib.experiments import lab as exp
from mimirlib.runner import saved

p = exp.Params.from_cell(globals())
plots.set_style()

# %%
run = exp.run(p)
report.glue_values(exp.prose_numbers(run))

# %% tags=["remove-cell"]
saved.keep(exp, p, run=run)  # for the handouts: mimirlib.runner.saved

# %% [markdown]
# ## The corpus: which domain plays which Pile domain
#
# | lab domain | source (offline) | plays | why |
# | --- | --- | --- | --- |
# | `code` | the model implementations of `transformers` (one folder per model family) | GitHub | source code in near-duplicate families: the library copies code between models (its `# Copied from` markers), as forks and vendored copies fill GitHub, where the paper's non-members share 76.9% of their 7-grams with the training data. The Python standard library, the lab's first code source, has almost no copies, and its non-members shared almost none of their 7-grams with the training pool. The overlap table below measures it, and the lab page's fidelity table judges it |
# | `licenses` | ScanCode licence texts (`licensedcode-data`) | GitHub (its licence files) | repositories carry licence files, and many licences are variants of one another: the high natural overlap of GitHub's non-members; the overlap table below measures how much |
# | `math` | DeepMind Mathematics generator (`mathematics-dataset`) | DM Mathematics | the very generator of the Pile's DM Mathematics |
# | `docs` | the docstrings of the same files: the text `transformers`' API documentation is built from | ArXiv / PubMed Central | technical prose written from templates, as papers reuse their field's phrasing (ArXiv 39.3%, PubMed Central 41.0%). A docstring can also appear inside a `code` member: the same text in two domains, as the Pile has. The Python documentation, the first source, had almost no overlap either |
# | `encyclopedia` | FOLDOC, the Free On-line Dictionary of Computing | Wikipedia | encyclopedic entries |
# | `changelog` | CPython changelog, dated by release | HackerNews-like short informal items; the **dated** domain | each document carries its release date, so the lab can train on text before a cutoff and draw later non-members |
#
# Sources, licences and the command that rebuilds the snapshot are in
# `mimirlib/lab/snapshot/ATTRIBUTION.md`.

# %%
display(exp.corpus_table(run.lab))

# %% [markdown]
# Each domain is split, by a seeded permutation, into a **training pool** (every target model
# trains on all of it, and members are sampled from it), a **held-out pool** (non-members) and
# a disjoint **reference pool** (for the reference model). Documents are cut to
# {glue:text}`doc_words` words before training, so a benchmark member is exactly a text the
# model trained on. In the dated domain, training and held-out documents predate the cutoff
# {glue:text}`cutoff`; later documents are kept aside in yearly bins for the temporal-shift chapter.

# %% tags=["hide-input"]
display(exp.later_pools(run.lab))

# %% [markdown]
# ## Non-members and their n-gram overlap
# Non-members are held-out documents kept only if at most 80% of their word 13-grams occur in
# the training pool (the paper's {term}`decontamination`, appendix A.3). The table gives the mean
# {term}`n-gram overlap` of the benchmark's non-members with the training pool for n = 7 and 13,
# computed exactly (against the set of every n-gram in the pool). Read the `code` row against
# GitHub's 76.9% in the Pile: a low value here means the lab's code domain does **not** reproduce
# GitHub's high overlap. The [n-gram overlap chapter](ngram_overlap.ipynb) measures the same
# non-members with a {term}`Bloom filter`, as the paper does at Pile scale; its means are slightly
# higher, by the filter's false positives (that chapter gives the excess).

# %%
display(run.overlap.round(3))

# %% [markdown]
# ## The model suite
# Targets are GPT-NeoX models trained for one epoch over the whole training pool in one
# seeded order, with checkpoints log-spaced early and evenly spaced later (as Pythia's).
# The `-natural` twin saw the same pool with some documents repeated (Pythia vs Pythia-dedup);
# `ref-disjoint-*` trained on the reference pool. `epochs-*` are the fixed-budget multi-epoch
# runs of the epochs chapter, and `epochs-*-ref` is trained exactly like the most-epochs run
# but on documents of the disjoint reference pool: the attacker's shadow model of the RaMIA
# chapter, and a control below (same recipe, never saw the members).
#
# Two kinds of model exist only to check the others. The **seed replicates** (`*-seed1`,
# `*-seed2`) repeat a target's recipe with another initialisation and data order: the spread of
# their AUCs on the same texts is the {term}`seed sd` that every comparative verdict in the book
# weighs beside its {term}`paired bootstrap` interval. The **recency control** (`*-sched69`) trains
# like its target with a cosine schedule whose horizon is the run's steps /
# {glue:text}`sched_fraction`, so its last checkpoint sits where Pythia's step 99,000 of 143,000
# sits (learning rate still ~30% of its peak): the training-size chapter's control for its
# learning-rate explanation; its replicates (`*-sched69-seed1`, ...) pair with its target's of the
# same seed. The role column of the table says what each model is for.
# Training runs in bfloat16 autocast (float32 weights) where the CPU computes bfloat16 natively
# (AVX512-BF16 or AMX), and in float32 where it would be emulated, many times slower (the profile's
# `train_dtype: fast` chooses between them); this build trained in {glue:text}`train_dtype`. The book scores texts in the same
# precision (RaMIA in float32 everywhere: its page says why), and every chapter's `dtype` parameter
# can set it. The `tokens seen (M)` column is how
# much text each model trained on.
#
# What makes the lab's ground truth exact is how a run orders its documents: one seeded shuffle
# per epoch, joined into one token stream and cut into windows, recording the steps at which each
# document was seen:
#
# ```{literalinclude} /mimirlib/lab/train.py
# :pyobject: pack
# ```

# %%
display(exp.model_suite(run.lab).style.format(precision=3))

# %% [markdown]
# The {term}`neighbourhood attack`'s perturbations come from the lab's own small BERT-style
# masked LM (no BERT {cite:p}`devlin2019bert` can be downloaded here), trained on the training
# pool; its record is below, with its final masked-token loss beside that of a uniform guess,
# ln(vocabulary size).

# %%
mlm = exp.mlm_summary(run.lab)
if mlm is not None:
    display(mlm)

# %% tags=["hide-input"]
report.glue_figure("fig_curves", exp.curves_figure(exp.training_curves(run.lab)))

# %% [markdown]
# ```{glue:figure} fig_curves
# Loss on fixed training-pool (solid) and held-out (dashed) windows at each checkpoint (seed
# replicates left out: their curves lie on their base model's).
# The gap between them is what membership inference feeds on.
# ```
#
# ## Is the lab informative? A sanity check
# A membership signal must exist before its absence means anything. The same members are
# scored by the {term}`LOSS attack` under (a) the fixed-budget multi-epoch runs, which trained on a
# small subset containing these members many times, and (b) the one-epoch target suite (with
# its seed replicates), where they were seen once among the whole training pool. All domains
# are pooled; every model scores the same texts, so the gap between the many-epoch run and each
# one-epoch target is a paired estimate. Each model's {term}`AUC` (0.5 is chance) comes with its
# 95% {term}`bootstrap interval`. The LOSS attack's score of a text is its mean token
# log-likelihood under the model:
#
# ```{literalinclude} /mimirlib/core/attacks.py
# :pyobject: loss_score
# ```

# %%
display(run.check.table.round(3))

# %% [markdown]
# **Which uncertainty to read.** Each AUC above carries a bootstrap interval over the texts: it
# says how the AUC would move had other texts been drawn. The seed replicates say how it would
# move had the *model* been trained again with another initialisation and data order, on the
# same texts. The table puts the two side by side (largest seed sd here:
# {glue:text}`seed_sd_max:.3f`). To compare two models or attacks scored on the same texts, read
# the *paired* interval of their difference (the text-to-text variation they share cancels)
# together with the seed sd; to compare one AUC with a fixed value (chance, say), read its
# bootstrap interval.

# %%
display(run.check.seed_spread().round(3))

# %% [markdown]
# (verdicts-lab)=
# ## Verdicts

# %%
display(verdicts.publish(exp.verdicts(run), "lab", exp.regime(run)))

# %% [markdown]
# With {glue:text}`sanity_n` members and as many non-members, the model trained
# {glue:text}`sanity_many_epochs` epochs on them reaches LOSS AUC
# {glue:text}`sanity_many_auc:.3f` (95% interval from {glue:text}`sanity_many_lo:.3f`), while the
# one-epoch targets score between {glue:text}`sanity_one_min:.3f` and
# {glue:text}`sanity_one_max:.3f`. {term}`Verdict <verdict>`: **{glue:text}`verdict_0`**, where "reproduced" means
# the lab is informative (rule: the many-epoch model's interval lies above chance, and its paired
# gap over the one-epoch targets is clear, beyond their seed spread; whether the interval also clears
# MIMIR's near-random band, AUC below {glue:text}`signal_floor`, is reported beside it). If it is
# anything else, read the chapters with care.
#
# (fidelity)=
# ## Fidelity: is the lab in the paper's regime?
# A lab experiment tests a claim only when the lab has the property the claim is about, at a
# sample size that could see the paper's effect. Each row below is measured in this build by the
# chapter its last column names, beside the paper's value, and decided by a tested rule of
# `mimirlib.verdicts.regime`. Each chapter's verdict table links the rows its claims rest on; the
# table's first lines say how a row marked *no* bears on those verdicts.
#
# ```{include} fidelity.md
# ```
#
# ## Build cost
# Time of each stage of the build that produced this lab, and how high memory had gone by its end
# (a running maximum over the build and its training workers, not the stage's own; re-measure with
# `make lab`; a lab that was already built reports the stages of its original build).

# %%
display(exp.build_cost(run.lab))

# %% [markdown]
# ## How the lab maps onto the paper
# | | paper | lab |
# | --- | --- | --- |
# | corpus | the deduplicated Pile, 22 domains | six offline domains, see above |
# | targets | Pythia-dedup 160M to 12B, one epoch | GPT-NeoX, see the table above, one epoch |
# | non-dedup twin | Pythia | `target-*-natural` |
# | reference | StableLM-3B and other public models | a disjoint-pool model of the same family, and the smallest target |
# | neighbours | BERT, 5% of tokens (25 per text in MIMIR's released data) | the lab's own small masked LM, {glue:text}`lab_neighbours` |
# | members / non-members | 1,000 each, Pile train/test | per domain, see the non-member table |
#
# The crucial difference is scale: the lab's largest one-epoch target saw
# {glue:text}`main_results.ipynb::tokens_seen_m:s` million tokens in training (the
# [main results](main_results.ipynb) run; the `tokens seen (M)` column above gives every model's),
# against about 208B for Pythia-dedup at the checkpoint the paper attacks (step 99,000 of 1,024
# sequences of 2,048 tokens: one epoch of the deduplicated Pile), so a member is a far larger share of what a model saw than any Pile
# document. The paper's claims
# that depend on that ratio (one-epoch training on huge data washes out the signal) are tested
# in the chapters, and each chapter reports where the lab departs from the paper.

# %% [markdown]
# ## Exercises
# Every exercise works on this chapter's own models and texts: what it needs is already in the
# signal cache, so it adds no forward pass. Write your prediction down before you open a solution.
#
# :::{exercise} Predict, then run: zlib on the many-epoch model
# :label: ex-lab-1
#
# The sanity check scores its texts with the {term}`LOSS attack` only. The {term}`zlib attack`
# divides the same log-likelihood by the text's compressed size, so that texts that are easy to
# predict because they repeat themselves count less. Predict zlib's AUC under the model trained
# {glue:text}`sanity_many_epochs` epochs on the same members and non-members: above, below or near
# LOSS's {glue:text}`sanity_many_auc:.3f`? Then run, in a cell at the end of this chapter:
# ```python
# exercises.texts_auc(ex_many, ex_bench.members, ex_bench.nonmembers, "zlib")
# ```
# :::
#
# :::{solution} ex-lab-1
# :class: dropdown
#
# zlib reaches AUC {glue:text}`ex_zlib_many:.3f` on the same texts and signals (LOSS:
# {glue:text}`sanity_many_auc:.3f`). zlib's score is the text's mean token log-likelihood divided
# by its compressed size in bytes. The compressed size differs from text to text (repetitive texts
# compress well, dense ones do not) for reasons that have nothing to do with membership, so the
# ratio also ranks texts by compressibility: where that spread is large against the loss gap
# between members and non-members, zlib loses AUC against LOSS however strong the gap, and where
# the texts compress alike, the two rank them almost the same way. Which case this run is in is
# read off the two numbers.
# :::
#
# :::{exercise} Change a parameter: the smoke lab
# :label: ex-lab-2
#
# The tests run the book on a tiny lab. Run this chapter on it (it builds in a few minutes the
# first time):
# ```bash
# .venv/bin/python -m mimirlib.runner lab --profile smoke
# ```
# Compare the model suite, the sanity check and its verdict with this page's.
# :::
#
# :::{solution} ex-lab-2
# :class: dropdown
#
# The smoke lab (`mimirlib/profiles/smoke.yml`) trains fewer and smaller models on far fewer
# documents, for seconds. Look at the `tokens seen (M)` column, the number of members of the
# sanity check and the width of its intervals: with few texts the intervals are wide, and the
# verdict can turn inconclusive although the rule is the same. A verdict is only as strong as the
# sample it was decided on.
# :::
#
# :::{exercise} Extend the library: a percentile-of-tokens attack
# :label: ex-lab-3
#
# {term}`Min-K%` averages the lowest k% of a text's token log-likelihoods. Register an attack
# named `token_percentile` whose score is the 10th percentile of them (`numpy.percentile` of
# `x.target.logprob` at 10; higher means "more likely a member") with
# `mimirlib.core.attacks.register(name, label)` as a decorator. The check cell scores it under the
# many-epoch model on the sanity check's texts and compares it with the instructor's key.
# :::

# %% tags=["hide-input"]
import mimirlib.core.attacks
from mimirlib.teach import exercises
from mimirlib.core.models import load_model

ex_bench, ex_many = exp.pooled_benchmark(run.lab), load_model(str(run.lab.model_dir(run.check.many)), dtype=p.dtype)
ex_texts = (ex_many, ex_bench.members, ex_bench.nonmembers)
report.glue_values({"ex_zlib_many": exercises.texts_auc(*ex_texts, "zlib")})

# %% tags=["hide-input", "solution"] nbgrader={"grade": false, "grade_id": "ex-lab-3-code", "locked": false, "schema_version": 3, "solution": true, "task": false}
import numpy as np

### BEGIN SOLUTION
@mimirlib.core.attacks.register("token_percentile", "10th percentile of tokens")
def token_percentile(x):
    return float(np.percentile(x.target.logprob, 10))
### END SOLUTION

# %% tags=["hide-input", "autocheck"] nbgrader={"grade": true, "grade_id": "ex-lab-3-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
report.glue_values({"ex_pct_many": exercises.check_attack("token_percentile", *ex_texts)})

# %% [markdown]
# :::{solution} ex-lab-3
# :class: dropdown
#
# The solution is the code cell above (click to show it): `np.percentile(x.target.logprob, 10)`
# inside `mimirlib.core.attacks.register("token_percentile", ...)`. It reaches AUC
# {glue:text}`ex_pct_many:.3f` under the many-epoch model (LOSS: {glue:text}`sanity_many_auc:.3f`).
# One token's value instead of a mean: it ignores how many tokens are surprising, only how
# surprising the tenth-percentile one is.
# :::
#
# ## Self-check quiz
#
# **1.** Why does the lab train its own models instead of using Pythia?
#
# - (a) Pythia's AUCs are wrong.
# - (b) Offline, on CPU, nothing as large can be run; and training them itself gives the lab exact
#   ground truth: which document each model saw, when and how often.
# - (c) GPT-NeoX cannot be attacked.
#
# :::{dropdown} Answer
# (b). See the first paragraph of this page and "How the lab maps onto the paper".
# :::
#
# **2.** What does the sanity check establish?
#
# - (a) That every attack beats chance on every model.
# - (b) That a membership signal exists in the lab when a model saw its members many times, so a
#   near-chance AUC elsewhere is a finding and not a broken pipeline.
# - (c) That one-epoch models memorise nothing.
#
# :::{dropdown} Answer
# (b). The rule is stated under the verdict table: the many-epoch model's interval must lie above
# chance (0.5) and beat the one-epoch targets by a clear effect; whether it also clears MIMIR's
# near-random band is reported beside, not required.
# :::
#
# **3.** Two seed replicates of a model differ only in...
#
# - (a) their training data.
# - (b) their initialisation and data order: same recipe, same data.
# - (c) their size.
#
# :::{dropdown} Answer
# (b). Their spread is the {term}`seed sd` every comparative verdict weighs.
# :::
