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
# provide yours. Nothing else in the chapter knows that the model comes from the lab.
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
dtype = "auto"  # model weights' dtype: "auto" (float32 on CPU, bfloat16 on GPU), "float32", "bfloat16"
engine = "local"  # where forward passes run: "local" (this process) or "ray" (workers on a Ray cluster: a local one, or the one $RAY_ADDRESS names; see the Running at scale page)
window = None  # tokens per scoring window; None means each model's trained context (the lab's: 256). Longer texts are scored whole, window by window
stride = None  # tokens between windows; None means half the window (each token then sees at least half a window of context)
batch_size = 16  # windows per forward pass
n_bootstrap = 1000  # bootstrap resamples for AUC intervals
seed = 0  # seed for the bootstrap and the baseline's folds
out_dir = None  # folder where the report (markdown, csv, png) is also written; None writes it under the cache folder

# %% tags=["hide-input"]
from pathlib import Path

from IPython.display import Markdown, display
from myst_nb import glue

from mimirlib import audit, paths, plots, report
from mimirlib.experiments.audit import demo_or_user_inputs, demo_training_corpus, summary_lines

plots.set_style()

# %% [markdown]
# ## Running the audit
# The inputs are read and checked first (one line naming the culprit on bad input), then every
# attack scores every text.

# %%
training_corpus = demo_training_corpus(profile, model, training_corpus)
model, reference_model, sources = demo_or_user_inputs(profile, model, reference_model, members, nonmembers,
                                                      labeled, demo_domain)
mem, non = audit.load_inputs(sources["members"], sources["nonmembers"], sources["labeled"],
                             text_column=text_column, label_column=label_column)
rep = audit.run_audit(model, mem, non, reference_model=reference_model, attacks=attacks, revision=revision,
                      dtype=dtype, window=window, stride=stride, batch_size=batch_size, n_bootstrap=n_bootstrap, seed=seed,
                      cache_dir=paths.signals_dir(), sources=sources, training_corpus=training_corpus,
                      corpus_index=corpus_index, corpus_column=text_column, engine=engine)
saved = rep.save(Path(out_dir) if out_dir else paths.audit_report_dir())
print(f"report written to {saved.name}/ ({'out_dir' if out_dir else 'the cache folder'})")
glue("demo_domain", demo_domain, display=False)

# %% [markdown]
# ## Non-members against the training corpus
# Before any attack number: how much of each non-member the model may have read word for word,
# and how many non-members MIMIR's {term}`decontamination` would have dropped. (In the
# demonstration the corpus is the lab's training pool, from which the lab drew its non-members
# with that same rule.)

# %%
display(Markdown("\n".join(rep.corpus_lines(name_only=True)[2:]) or "No training corpus given (`training_corpus`)."))

# %% [markdown]
# ## The report
# Each attack's AUC with its 95% bootstrap interval and TPR at low FPR (higher score = more
# likely a member; 0.5 is chance), the model-free baseline, and the n-gram overlap of the
# non-members with the members. The same report is saved as `report.md` with csv files and
# figures (path printed above).

# %%
print("\n".join(summary_lines(rep)))
display(rep.metrics_table().set_index("attack"))
print(rep.blind_line())
display(rep.overlap.set_index("n"))
display(Markdown("**Findings**\n\n" + "\n".join(f"- {f}" for f in rep.findings())))

# %% [markdown]
# ## ROC curves and score distributions
# Linear and log-log ROC (the log-log panel starts at the smallest FPR the non-members can
# resolve); score distributions of members and non-members for each attack.

# %%
fig = rep.roc_figure()
report.glue_figure("fig_roc", fig)
fig = rep.scores_figure()
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
