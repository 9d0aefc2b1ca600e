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
# # Audit your own model
#
# Point this chapter at a causal language model and two sets of texts, one the model was
# trained on ({term}`members <member>`) and one it was not ({term}`non-members <non-member>`),
# and it produces the report the other chapters build piece by piece: each attack's
# {term}`AUC` with a {term}`bootstrap interval`, {term}`TPR at low FPR`, {term}`ROC curves <ROC curve>`,
# score distributions, the {term}`n-gram overlap` of your non-members with your members, and a
# **{term}`blind baseline`** {cite:p}`das2024blind` that never sees the model. Read the last two
# before the first: the MIMIR paper's lesson {cite:p}`duan2024mimir` is that a high AUC on a
# badly built member/non-member split measures the
# split (see the [n-gram overlap](ngram_overlap.ipynb) and [temporal shift](temporal_shift.ipynb)
# chapters), and a low one on a good split is what one-epoch pre-training usually gives (see
# [main results](main_results.ipynb)).
#
# **As rendered here** the chapter audits the lab's largest one-epoch model on the lab's own
# {glue:text}`demo_domain` benchmark, written out as two jsonl files exactly as you would
# provide yours, with the lab's reference model and training pool standing in for the ones you would
# name (`reference_model`, `training_corpus`); nothing else in the chapter knows that the model comes
# from the lab.
#
# **Without the book**, the same report from the command line:
# ```bash
# .venv/bin/python -m mimirlib.audit --model EleutherAI/pythia-160m --members members.jsonl \
#     --nonmembers nonmembers.jsonl --out my-audit
# .venv/bin/python -m mimirlib.audit --model ./my-model --labeled data.csv --label-column is_member \
#     --text-column body --reference-model ./my-reference
# ```
# A missing file, a missing column, an empty set, a bad label or a model that cannot be loaded
# stops it with one line naming the culprit, before anything is written.

# %% tags=["parameters", "hide-input"]
profile = "lab"  # embedded lab used for the demonstration when model is None: "smoke" (tiny, for tests) or "lab"
draw = None  # the demonstration lab's draw: None, the profile's; N, the lab drawn with seed N; set by mimir-run --draw N
model = None  # the model to audit: hub name (e.g. "EleutherAI/pythia-160m") or local folder; None audits the lab's largest target as a demonstration
revision = None  # revision of the model, e.g. "step99000"; None means the default branch
reference_model = None  # optional reference model for the reference-based attack (hub name or folder); None uses the lab's reference in the demonstration, and no reference otherwise
members = None  # file of texts the model was trained on (jsonl, csv or parquet with a text column)
nonmembers = None  # file of texts the model was NOT trained on (same formats)
labeled = None  # instead of members/nonmembers: one file with a text column and a label column
training_corpus = None  # the model's training corpus (file, folder or glob of .txt/.jsonl/.parquet) to check the non-members against; None uses the lab's training pool in the demonstration, and no corpus otherwise
corpus_index = "bloom"  # n-gram index of the training corpus: "bloom" (bounded memory, 1% false positives) or "exact"
text_column = "text"  # name of the text column in the files
label_column = "label"  # name of the label column of the labeled file (true/false, 1/0 or member/nonmember)
demo_domain = "code"  # lab domain whose benchmark the demonstration writes to files (used only when model is None)
attacks = None  # attacks to run; None means loss, zlib, min_k, min_k_pp, plus ref when a reference model is given
dtype = "auto"  # model weights' dtype: "auto" (float32 on CPU, bfloat16 on GPU), "fast" (bfloat16 where native), "float32", "bfloat16"
engine = "local"  # where forward passes run: "local" (this process) or "ray" (workers on a Ray cluster: a local one, or the one $RAY_ADDRESS names; see the Running at scale page)
ray_address = None  # the Ray cluster to join when the engine is "ray": "auto", "host:port" or "ray://host:port"; None starts a local one (or joins the one $RAY_ADDRESS names)
ray_workers = None  # Ray workers, each loading a model once; None: one per GPU of the cluster (one per CPU without GPUs)
ray_gpus_per_worker = None  # GPUs each Ray worker holds; None: 1 on a cluster with GPUs, else 0 (0.5 puts two workers on one GPU)
ray_timeout = None  # seconds a named Ray head has to answer; None: 8 (a wrong address stops the chapter in about that time, in one line)
window = None  # tokens per scoring window; None means each model's trained context (the lab's: 256). Longer texts are scored whole, window by window
stride = None  # tokens between windows; None means half the window (each token then sees at least half a window of context)
batch_size = 16  # windows per forward pass
n_bootstrap = 1000  # bootstrap resamples for AUC intervals
seed = 0  # seed for the bootstrap and the baseline's folds
out_dir = None  # folder where the report (markdown, csv, png) is also written; None writes it under the cache folder

# %% tags=["hide-input"]
from IPython.display import Markdown, display
from myst_nb import glue

from mimirlib.display import plots, report
from mimirlib.experiments import audit as exp
from mimirlib.runner import saved

p = exp.Params.from_cell(globals())
plots.set_style()

# %% [markdown]
# ## Running the audit
# The inputs are read and checked first (one line naming the culprit on bad input), then every
# attack scores every text.

# %%
run = exp.run(p)
print(f"report written to {run.saved.name}/ ({'out_dir' if p.out_dir else 'the cache folder'})")
glue("demo_domain", p.demo_domain, display=False)

# %% tags=["remove-cell"]
saved.keep(exp, p, run=run)  # for the handouts: mimirlib.runner.saved

# %% [markdown]
# ## Non-members against the training corpus
# Before any attack number: how much of each non-member the model may have read word for word,
# and how many non-members MIMIR's {term}`decontamination` would have dropped. (In the
# demonstration the corpus is the lab's training pool, from which the lab drew its non-members
# with that same rule.)

# %%
display(Markdown("\n".join(run.report.corpus_lines(name_only=True)[2:]) or "No training corpus given (`training_corpus`)."))

# %% [markdown]
# ## The report
# Each attack's AUC with its 95% bootstrap interval and TPR at low FPR (higher score = more
# likely a member; 0.5 is chance), the model-free baseline, and the n-gram overlap of the
# non-members with the members. The same report is saved as `report.md` with csv files and
# figures (in the folder named above: `out_dir` when set, else `audit-report/` in the cache folder).

# %%
print("\n".join(exp.summary_lines(run.report)))
display(run.report.metrics_table().set_index("attack"))
print(run.report.blind_line())
display(report.words(run.report.overlap.set_index("n").round(3)))
display(Markdown("**Findings**\n\n" + "\n".join(f"- {f}" for f in run.report.findings())))

# %% [markdown]
# ## ROC curves and score distributions
# Linear and log-log ROC (the log-log panel starts at the smallest FPR the non-members can
# resolve); score distributions of members and non-members for each attack.

# %%
fig = run.report.roc_figure()
report.glue_figure("fig_roc", fig)
fig = run.report.scores_figure()
report.glue_figure("fig_scores", fig)

# %% [markdown]
# ```{glue:figure} fig_roc
# ROC curves of every attack on the audited model.
# ```
#
# ```{glue:figure} fig_scores
# Score distributions of members and non-members (higher = more member-like).
# ```
#
# ## How to read it
# The findings above are decided by rules on the report's numbers, in the library:
#
# ```{literalinclude} /mimirlib/audit/report.py
# :pyobject: AuditReport.findings
# ```
#
# - **AUC interval above 0.5, blind baseline near 0.5, low 13-gram overlap:** the model leaks
#   membership of these texts, and the split is fair.
# - **Blind baseline well above 0.5:** members and non-members differ in a way a bag of words
#   sees (dates, topics, formatting). Rebuild the non-member set from the same source and period
#   as the members before trusting any attack AUC.
# - **Many non-members with high n-gram overlap:** your "non-members" partly repeat your
#   members; a low AUC may mean the model saw their content elsewhere, not that it leaks nothing.
# - **AUC interval covering 0.5:** no evidence of a membership signal at this sample size; it
#   is not proof of privacy (see the [RaMIA](ramia.ipynb) chapter for near-copies).
#
# ## Re-run it on your model
# ```bash
# .venv/bin/python -m mimirlib.runner audit -p model=EleutherAI/pythia-160m \
#     -p members=data/members.jsonl -p nonmembers=data/nonmembers.jsonl -p dtype=bfloat16
# .venv/bin/python -m mimirlib.runner audit --list-params
# ```
# A hub model needs network access (and a GPU for multi-billion-parameter models: one
# forward pass per text, batch size 8-16 in bfloat16 fits a 24 GB GPU up to about 7B).

# %% [markdown]
# ## Exercises
# Every exercise works on the audited model and texts above: what it needs is already in the
# signal cache, so the first three add no forward pass. Write your prediction down before you open
# a solution.
#
# :::{exercise} Predict, then run: Min-K% at k = 5%
# :label: ex-audit-1
#
# The report's Min-K% uses k = 20%. Predict its AUC on these texts at k = 5%, then run, in a cell
# at the end of this chapter:
# ```python
# exercises.texts_auc(ex_model, mem, non, "min_k", k=0.05, options=p.scoring())
# ```
# :::
#
# :::{solution} ex-audit-1
# :class: dropdown
#
# On the same texts and signals, Min-K% has AUC {glue:text}`ex_mink_chapter:.3f` at k = 20% (the
# report's row) and {glue:text}`ex_mink_small:.3f` at k = 5%. Neither is "the" leakage of the
# model: each is one attack's separation of these members from these non-members, and the blind
# baseline line above says how much of it the texts' distribution alone explains.
# :::
#
# :::{exercise} Change a parameter: another domain
# :label: ex-audit-2
#
# The demonstration audits the lab's largest target on the {glue:text}`demo_domain` benchmark.
# Run it on another domain:
# ```bash
# .venv/bin/python -m mimirlib.runner audit -p demo_domain=math
# ```
# Which parts of the report change, and which finding would you trust least?
# :::
#
# :::{solution} ex-audit-2
# :class: dropdown
#
# Every number changes with the texts: the attack AUCs, the blind baseline and the overlap table.
# Read the blind baseline first: where a model-free classifier separates the two files, an attack's
# AUC partly measures the split, not the model; the findings list says so when it happens. Then
# read each AUC with its interval, as in the "How to read it" section.
# :::
#
# :::{exercise} Extend the library: a percentile-of-tokens attack
# :label: ex-audit-3
#
# Register an attack named `token_percentile` whose score is the 10th percentile of the text's
# token log-likelihoods (`numpy.percentile(x.target.logprob, 10)`; higher means "more likely a
# member") with `mimirlib.core.attacks.register(name, label)` as a decorator. The check cell scores it
# on the audited texts and compares it with the instructor's key. Once registered, `run_audit`
# accepts it in its `attacks` in this kernel.
# :::

# %% tags=["hide-input"]
import mimirlib.core.attacks
from mimirlib.teach import exercises
from mimirlib.core.models import load_model

ex_model, ex_kw = load_model(run.model, p.revision, dtype=p.dtype), dict(options=p.scoring())
mem, non = run.members, run.nonmembers
report.glue_values({"ex_mink_chapter": exercises.texts_auc(ex_model, mem, non, "min_k", **ex_kw),
                    "ex_mink_small": exercises.texts_auc(ex_model, mem, non, "min_k", k=0.05, **ex_kw),
                    "ex_loss": exercises.texts_auc(ex_model, mem, non, "loss", **ex_kw)})

# %% tags=["hide-input", "solution"] nbgrader={"grade": false, "grade_id": "ex-audit-3-code", "locked": false, "schema_version": 3, "solution": true, "task": false}
import numpy as np

### BEGIN SOLUTION
@mimirlib.core.attacks.register("token_percentile", "10th percentile of tokens")
def token_percentile(x):
    return float(np.percentile(x.target.logprob, 10))
### END SOLUTION

# %% tags=["hide-input", "autocheck"] nbgrader={"grade": true, "grade_id": "ex-audit-3-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
report.glue_values({"ex_pct": exercises.check_attack("token_percentile", ex_model, mem, non, **ex_kw)})

# %% [markdown]
# :::{solution} ex-audit-3
# :class: dropdown
#
# The solution is the code cell above (click to show it). It reaches AUC {glue:text}`ex_pct:.3f`
# on the audited texts, LOSS {glue:text}`ex_loss:.3f` on the same texts.
# :::
#
# :::{exercise} Change a parameter: the bootstrap's seed
# :label: ex-audit-4
#
# Re-run the audit with another bootstrap seed and fewer resamples:
# ```bash
# .venv/bin/python -m mimirlib.runner audit -p seed=1 -p n_bootstrap=200
# ```
# Which numbers move, and by how much would you expect?
# :::
#
# :::{solution} ex-audit-4
# :class: dropdown
#
# The AUCs and TPRs do not move at all: they are computed once from the scores. Only the interval
# ends move, by a small fraction of their width (the bootstrap's own Monte Carlo error, larger with
# fewer resamples); the blind baseline's folds also depend on the seed. If a conclusion changes with
# the seed, it was never supported by the interval.
# :::
#
# ## Self-check quiz
#
# **1.** Your model's audit shows every attack near AUC 0.5. Is the model private?
#
# - (a) Yes.
# - (b) Not necessarily: these attacks on these texts do not separate them; a stronger attack, or
#   members the model saw more often, could (see the epochs chapter), and near-copies are another
#   question (see the RaMIA chapter).
#
# :::{dropdown} Answer
# (b). See "How to read it".
# :::
#
# **2.** Why does the audit run a blind baseline?
#
# - (a) To check whether members and non-members can be told apart without the model at all: if
#   they can, an attack's AUC partly measures the split.
# - (b) To speed up the attacks.
#
# :::{dropdown} Answer
# (a).
# :::
#
# **3.** Where should non-members come from?
#
# - (a) Any text the model did not see.
# - (b) The same source and period as the members, so that only membership differs.
#
# :::{dropdown} Answer
# (b). A shifted set inflates AUC (see the temporal-shift chapter).
# :::
