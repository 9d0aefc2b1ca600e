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

# %% tags=["parameters"]
profile = "lab"  # which embedded lab to build and describe: "smoke" (tiny, for tests) or "lab" (the book's default)
dtype = "auto"  # weights' dtype when scoring: "auto" (float32 on CPU, bfloat16 on GPU), "float32", "bfloat16" (the lab profile scores in bfloat16, ~1.5x faster on CPU)

# %% [markdown]
# # The embedded lab: a miniature Pile and a Pythia-like suite
#
# The MIMIR paper attacks Pythia models (160M to 12B parameters) trained on the Pile, using
# benchmarks drawn from the Pile's train and test splits. None of that can be downloaded
# here, so the book builds a miniature of it: a corpus of six domains made from text that
# ships offline, and GPT-NeoX models (Pythia's architecture) trained from scratch on CPU.
# Because the lab trains the models itself, it records **which document each model saw, at
# which step and how many times**: the ground truth the paper could only approximate.
# Everything on this page is read from the lab build that the book's chapters use.

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display
from myst_nb import glue

from mimirlib import ngrams, plots
from mimirlib.data import load_benchmark
from mimirlib.lab import corpus
from mimirlib.lab.build import MAIN_SPLIT, ensure_lab

plots.set_style()
lab = ensure_lab(profile)
m = lab.manifest
cfg = lab.config

# %% [markdown]
# ## The corpus: which domain plays which Pile domain
#
# | lab domain | source (offline) | plays | why |
# | --- | --- | --- | --- |
# | `code` | Python standard-library source | GitHub | code, with the repetitive syntax and boilerplate that makes GitHub the paper's high-overlap outlier |
# | `licenses` | ScanCode licence texts (`licensedcode-data`) | a high-overlap legal domain | licences are near-copies of each other: natural n-gram overlap between members and non-members |
# | `math` | DeepMind Mathematics generator (`mathematics-dataset`) | DM Mathematics | the very generator of the Pile's DM Mathematics |
# | `docs` | Python documentation (reST) | ArXiv / PubMed Central | long technical prose |
# | `encyclopedia` | FOLDOC, the Free On-line Dictionary of Computing | Wikipedia | encyclopedic entries |
# | `changelog` | CPython changelog, dated by release | HackerNews-like short informal items; the **dated** domain | each document carries its release date, so the lab can train on text before a cutoff and draw later non-members |
#
# Sources, licences and the command that rebuilds the snapshot are in
# `mimirlib/lab/snapshot/ATTRIBUTION.md`.

# %%
snap = corpus.snapshot_manifest()
rows = []
for d in cfg["domains"]:
    docs = corpus.load_domain(d)
    w = np.array([len(x["text"].split()) for x in docs])
    pools = m["pools"][d]
    rows.append({"domain": d, "documents in snapshot": len(docs), "median words": int(np.median(w)),
                 "training pool": pools["train"], "held-out pool": pools["heldout"],
                 "reference pool": pools["reference"]})
corpus_table = pd.DataFrame(rows).set_index("domain")
display(corpus_table)
glue("n_domains", len(cfg["domains"]), display=False)
glue("train_docs", int(corpus_table["training pool"].sum()), display=False)

# %% [markdown]
# Each domain is split, by a seeded permutation, into a **training pool** (every target model
# trains on all of it, and members are sampled from it), a **held-out pool** (non-members) and
# a disjoint **reference pool** (for the reference model). Documents are cut to
# {glue:text}`doc_words` words before training, so a benchmark member is exactly a text the
# model trained on. In the dated domain, training and held-out documents predate the cutoff
# {glue:text}`cutoff`; later documents are kept aside in yearly bins for the temporal-shift chapter.

# %%
glue("doc_words", cfg["doc_words"], display=False)
glue("cutoff", (cfg.get("temporal") or {}).get("cutoff", "none"), display=False)
later = {d: {k: v for k, v in m["pools"][d].items() if k.startswith("later:")} for d in cfg["domains"]}
display(pd.DataFrame(later).T.dropna(how="all", axis=0).fillna(0).astype(int))

# %% [markdown]
# ## Non-members and their n-gram overlap
# Non-members are held-out documents kept only if at most 80% of their word 13-grams occur in
# the training pool (the paper's decontamination, appendix A.3). The table gives the mean
# overlap of the benchmark's non-members with the training pool for n = 7 and 13.

# %%
splits = json.loads((lab.root / "splits.json").read_text())
texts = lab.trained_texts()
train_texts = [texts[i] for d in cfg["domains"] for i in splits[d]["train"]]
grams = {n: ngrams.ngram_set(train_texts, n) for n in (7, 13)}
ov_rows = []
for d in cfg["domains"]:
    b = load_benchmark(lab.benchmarks_dir, d, MAIN_SPLIT)
    ov_rows.append({"domain": d, "members": len(b.members), "non-members": len(b.nonmembers),
                    **{f"mean {n}-gram overlap": ngrams.overlaps(b.nonmembers, grams[n], n).mean() for n in (7, 13)}})
display(pd.DataFrame(ov_rows).set_index("domain").round(3))

# %% [markdown]
# ## The model suite
# Targets are GPT-NeoX models trained for one epoch over the whole training pool in one
# seeded order, with checkpoints log-spaced early and evenly spaced later (as Pythia's).
# The `-natural` twin saw the same pool with about a tenth of documents repeated (Pythia vs
# Pythia-dedup); `ref-disjoint-*` trained on the reference pool. `epochs-*` are the
# fixed-budget multi-epoch runs of the epochs chapter, and `epochs-*-ref` is trained exactly like
# the most-epochs run but on documents of the disjoint reference pool: the attacker's shadow
# model of the RaMIA chapter, and a control below (same recipe, never saw the members).
# Training runs in bfloat16 autocast (float32 weights), and the book scores texts with
# bfloat16 weights, both about twice as fast on this class of CPU; every chapter's `dtype`
# parameter switches scoring back to float32.

# %%
models = pd.DataFrame([{"model": k, "parameters (M)": v["params"] / 1e6, "hidden": v["config"]["size"]["hidden"],
                        "layers": v["config"]["size"]["layers"], "epochs": v["config"]["epochs"],
                        "steps": v["steps"], "tokens seen (M)": v["tokens_seen"] / 1e6,
                        "train time (s)": v["train_seconds"], "tokens/s": v["tokens_per_second"]}
                       for k, v in m["models"].items() if "config" in v]).set_index("model")
display(models.round(2))

# %% [markdown]
# The neighbourhood attack's perturbations come from the lab's own small BERT-style masked LM
# (no BERT can be downloaded here), trained on the training pool; its final masked-token loss
# is below. A chance-level model has loss near ln(vocabulary size).

# %%
if m.get("mlm"):
    mlm = m["mlm"]
    display(pd.DataFrame([{k: v for k, v in mlm.items() if not isinstance(v, (dict, list))}]).T.rename(columns={0: "masked LM"}))

# %%
curves = []
for name in m["models"]:
    f = lab.model_dir(name) / "curves.json"
    if f.exists():
        for r in json.loads(f.read_text()):
            for split_name in ("train", "heldout"):
                if f"{split_name}_loss" in r:
                    curves.append({"model": name, "tokens": r["tokens"], "split": split_name, "loss": r[f"{split_name}_loss"]})
curves = pd.DataFrame(curves)
fig, ax = plt.subplots(figsize=(8, 4.5))
for (name, split_name), g in curves.groupby(["model", "split"]):
    ax.plot(g.tokens, g.loss, ls="-" if split_name == "train" else "--", marker="o", ms=3,
            label=f"{name} ({split_name})")
ax.set_xscale("log")
ax.set_xlabel("tokens seen")
ax.set_ylabel("mean token NLL")
ax.legend(fontsize=7, ncol=2)
glue("fig_curves", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_curves
# Loss on fixed training-pool (solid) and held-out (dashed) windows at each checkpoint.
# The gap between them is what membership inference feeds on.
# ```
#
# ## Is the lab informative? A sanity check
# A membership signal must exist before its absence means anything. The same members are
# scored by the LOSS attack under (a) the fixed-budget multi-epoch runs, which trained on a
# small subset containing these members many times, and (b) the one-epoch target suite, where
# they were seen once among the whole training pool. All domains are pooled.

# %%
from mimirlib.data import Benchmark
from mimirlib.lab.build import cache_root
from mimirlib.models import load_model
from mimirlib.scoring import evaluate_scores, score_benchmark
from mimirlib.signals import SignalCache

parts = [load_benchmark(lab.benchmarks_dir, d, "epochs") for d in cfg["domains"]]
pooled = Benchmark("epochs (all domains)", tuple(t for b in parts for t in b.members),
                   tuple(t for b in parts for t in b.nonmembers))
cache = SignalCache(cache_root() / "signals")
sanity = []
for name, info in m["models"].items():
    if name.startswith("epochs-") or (name.startswith("target-") and not name.endswith("-natural")):
        s = score_benchmark(pooled, load_model(str(lab.model_dir(name)), dtype=dtype), ["loss"], cache=cache)
        ev = evaluate_scores(s, n_resamples=1000, seed=0).iloc[0]
        sanity.append({"model": name, "epochs": info["config"]["epochs"], "saw the members": not name.endswith("-ref"),
                       "documents trained on": len(json.loads((lab.model_dir(name) / "data_order.json").read_text())["spans"]),
                       "LOSS AUC": ev.auc, "95% CI low": ev.auc_lo, "95% CI high": ev.auc_hi})
sanity = pd.DataFrame(sanity).set_index("model")
display(sanity.round(3))
many = sanity[(sanity.epochs == sanity.epochs.max()) & sanity["saw the members"]].iloc[0]
one = sanity[(sanity.epochs == 1) & sanity.index.str.startswith("target-")]
informative = bool(many["95% CI low"] > 0.6 and one["LOSS AUC"].max() < many["95% CI low"])
glue("sanity_many_epochs", int(many.epochs), display=False)
glue("sanity_many_auc", float(many["LOSS AUC"]), display=False)
glue("sanity_many_lo", float(many["95% CI low"]), display=False)
glue("sanity_one_min", float(one["LOSS AUC"].min()), display=False)
glue("sanity_one_max", float(one["LOSS AUC"].max()), display=False)
glue("sanity_n", len(pooled.members), display=False)
glue("sanity_verdict", "informative" if informative else "NOT informative: read the chapters with care", display=False)

# %% [markdown]
# With {glue:text}`sanity_n` members and as many non-members, the model trained
# {glue:text}`sanity_many_epochs` epochs on them reaches LOSS AUC
# {glue:text}`sanity_many_auc:.3f` (95% interval from {glue:text}`sanity_many_lo:.3f`), while the
# one-epoch suite scores between {glue:text}`sanity_one_min:.3f` and
# {glue:text}`sanity_one_max:.3f`. Verdict: the lab is **{glue:text}`sanity_verdict`** (rule:
# the many-epoch model's interval lies above 0.6 and above every one-epoch AUC).
#
# ## Build cost
# Time and peak memory of each stage of the build that produced this lab (re-measure with
# `make lab`; a lab that was already built reports the stages of its original build).

# %%
display(pd.DataFrame(m["timings"]).T)

# %% [markdown]
# ## How the lab maps onto the paper
# | | paper | lab |
# | --- | --- | --- |
# | corpus | the Pile, 300B tokens, 22 domains | six offline domains, see above |
# | targets | Pythia-dedup 160M to 12B, one epoch | GPT-NeoX, see the table above, one epoch |
# | non-dedup twin | Pythia | `target-*-natural` |
# | reference | StableLM-3B and other public models | a disjoint-pool model of the same family, and the smallest target |
# | neighbours | BERT, 25 per text, 5% of tokens | the lab's own small masked LM, fewer neighbours |
# | members / non-members | 1,000 each, Pile train/test | per domain, see the non-member table |
#
# The crucial difference is scale: the lab's training pool is a few million tokens, so a
# member is a far larger share of what a model saw than any Pile document. The paper's claims
# that depend on that ratio (one-epoch training on huge data washes out the signal) are tested
# in the chapters, and each chapter reports where the lab departs from the paper.
