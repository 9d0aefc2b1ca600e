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
# # Training-data size: MIA performance across training
#
# **The paper's claim** (MIMIR {cite:p}`duan2024mimir` section 3.2.1, Figure 2 left and Figure
# 13): on Pythia-dedup's intermediate checkpoints {cite:p}`biderman2023pythia`, with
# {term}`members <member>` sampled from the 100 steps before each checkpoint and 1,000
# {term}`non-members <non-member>` fixed, MIA performance "starts as near-random, then rapidly increases within
# the next few thousand steps, before decreasing across successive checkpoints". Appendix C.1
# (Figure 9): at a fixed checkpoint (step 99,000), members seen more recently are easier, and the
# advantage decays to a plateau for members seen long ago.
#
# **What the lab does.** Every lab target saved checkpoints along its one epoch (log-spaced
# early, then regular, as Pythia's), and the lab recorded at which steps each document was seen.
# For each checkpoint, members are drawn from documents seen entirely within the last
# {glue:text}`window_pct:.0f`% of the run's steps before it ({glue:text}`window_steps` of
# {glue:text}`n_steps` steps), spread evenly over domains. That
# window is far wider than the paper's: the last 100 of ~99,000 steps is 0.1% of the run, so
# the lab's "recent" members are older, relative to the run, than the paper's. The non-members
# are one fixed set of {glue:text}`n_nonmembers` held-out documents ({glue:text}`n_domains`
# domains, equally many from each), the same at every checkpoint and every window, as in the
# paper. Each {term}`AUC` is computed within each domain and averaged with the members' domain shares:
# an early window holds few members (see below), and a window that happens to hold mostly one
# domain would otherwise be scored on the loss gap between domains instead of membership.

# %% tags=["parameters", "hide-input"]
profile = "lab"  # which embedded lab to read: "smoke" (tiny, for tests) or "lab" (the book's default)
draw = None  # the lab's draw: None reads the profile's lab; N, the lab drawn with seed N (its splits, selection, initialisation, data order), built if missing; set by mimir-run --draw N
targets = None  # lab target models, e.g. [target-h64] (a list of names from lab.target_names()); None means the whole one-epoch suite
attacks = ["loss", "ref", "zlib", "min_k", "min_k_pp"]  # attacks to run (the neighbourhood attack is left out: one forward pass per neighbour per checkpoint)
window_fraction = 0.1  # members come from the last window_fraction of the run's steps before each checkpoint (the paper: the last 100 steps, about 0.1% of its ~99,000-step epoch)
samples = 120  # members per window, at most (an equal share per domain; non-members: as many, one fixed set for every checkpoint and window)
min_members = 100  # a window is read only when it holds at least this many members (the paper draws 1,000 from each; the lab's first log-spaced windows hold fewer: see the members table)
recency_windows = 6  # for the recency figure: how many successively earlier windows to score at the final checkpoint
n_bootstrap = 1000  # bootstrap resamples for AUC intervals
seed = 0  # seed for member sampling and the bootstrap
batch_size = 16  # windows per forward pass
dtype = "auto"  # weights' dtype when scoring: "auto" (float32 on CPU, bfloat16 on GPU), "fast" (bfloat16 where native), "float32", "bfloat16"
engine = "local"  # where forward passes run: "local" (this process) or "ray" (workers on a Ray cluster: a local one, or the one $RAY_ADDRESS names; see the Running at scale page)
ray_address = None  # the Ray cluster to join when the engine is "ray": "auto", "host:port" or "ray://host:port"; None starts a local one (or joins the one $RAY_ADDRESS names)
ray_workers = None  # Ray workers, each loading a model once; None: one per GPU of the cluster (one per CPU without GPUs)
ray_gpus_per_worker = None  # GPUs each Ray worker holds; None: 1 on a cluster with GPUs, else 0 (0.5 puts two workers on one GPU)
ray_timeout = None  # seconds a named Ray head has to answer; None: 8 (a wrong address stops the chapter in about that time, in one line)
seed_replicates = True  # also score the lab's seed replicates of each target (other initialisation and data order): the seed sd beside every effect

# %% tags=["hide-input"]
from IPython.display import display

from mimirlib import verdicts
from mimirlib.display import plots, report
from mimirlib.experiments import training_size as exp
from mimirlib.runner import saved

p = exp.Params.from_cell(globals())
plots.set_style()

# %%
run = exp.run(p)
print(run.cache_note)

# %% tags=["remove-cell"]
saved.keep(exp, p, run=run)  # for the handouts: mimirlib.runner.saved

# %% tags=["hide-input"]
report.glue_values(exp.summary(run))

# %% [markdown]
# ## Members in every window
# Members per window before each checkpoint (rows: checkpoint step; columns: target). A window is
# read only when it holds at least {glue:text}`min_members` members, as the paper's windows all hold
# its full sample: the lab's first, log-spaced checkpoints (steps {glue:text}`unread_steps`) cover
# the few steps trained so far and hold {glue:text}`n_unread_text` members, so they are listed here
# and not read. The first checkpoint read is step {glue:text}`first_step`; the windows read hold
# {glue:text}`n_window_text` members, against the same {glue:text}`n_nonmembers` non-members.

# %%
display(exp.members_per_window(run))

# %% [markdown]
# ## AUC versus training step (Figure 2 left, Figure 13)
# One panel per attack; one line per model size; bands are 95%
# {term}`bootstrap intervals <bootstrap interval>`. Each AUC is the within-domain one described
# above, computed by this function of the library (members against the non-members of their own
# domain, ties counted half, averaged with the members' domain shares):
#
# ```{literalinclude} /mimirlib/experiments/window_auc.py
# :pyobject: stratified_auc
# ```

# %%
by_step = exp.by_step(run)
fig = plots.plot_metric_vs(by_step, x="tokens", hue="target", col="attack", logx=True)
report.glue_figure("fig_by_step", fig)
display(exp.auc_pivot(by_step))

# %% [markdown]
# ```{glue:figure} fig_by_step
# AUC of each attack at each checkpoint (x: tokens seen, log scale), members from the window
# just before the checkpoint, non-members fixed.
# ```
#
# ## Where it starts, and the rise and fall, paired
# The first checkpoint's AUC with its interval and the {term}`seed sd` of the same AUC over the
# lab's seed replicates (other initialisation and data order, so other members in the window). Then,
# for each curve, the rise from the first checkpoint to the peak and the fall from the peak to
# the last checkpoint. The peak of a noisy curve, chosen on the texts it is then measured on, is
# biased up, and that would inflate the rise and the fall alike. So the texts (each window's
# members and the fixed non-members) are split at random into two halves, seeded and stratified
# by member/non-member, domain and window, a text staying in its half wherever it recurs: the
# peak is the checkpoint with the highest AUC (averaged over attacks) on the *selection* half,
# and the rise and the fall are measured on the other, *test*, half only. The table's AUCs and
# member counts are the test half's, so they differ from the figure's.
#
# ```{literalinclude} /mimirlib/experiments/window_auc.py
# :pyobject: split_halves
# ```
#
# Two checkpoints share their non-members, so each difference is a
# {term}`paired bootstrap` on those texts (their members differ: each window holds its own).
# Read the seed sd
# beside the interval: the interval says how the difference would move on other texts, the seed
# sd how it would move with another training run.

# %%
display(exp.start_table(exp.start_auc(run)))
display(exp.rise_fall_table(exp.rise_and_fall(run)))

# %% [markdown]
# ## Recency at the final checkpoint (Figure 9), and a control
# The final checkpoint of each model, with members from successively earlier windows of the
# same width: window 0 ends at the last step, window *j* ends *j* windows earlier.
#
# The lab's targets end their cosine learning-rate schedule at {glue:text}`target_lr_pct:.0f`%
# of its peak, so the last windows got the smallest updates; the paper's Figure 9 reads
# Pythia-dedup at step 99,000 of a 143,000-step schedule, where the rate is still about 30% of
# its peak. To test whether that difference explains the lab's recency, the lab trained a
# control, **{glue:text}`control`**: the same data, order and recipe as
# **{glue:text}`control_target`**, but with a schedule horizon of steps / 0.692, so its final
# checkpoint sits where Pythia's step 99,000 sits (rate {glue:text}`control_lr_pct:.0f`% of its
# peak). Both are read on the same windows and the same texts, seed by seed: the control has
# replicates too, each trained from the initialisation and in the data order of its target's
# replicate of the same seed, so the control table and the two control verdicts read the mean over
# these pairs and their measured seed spread.

# %%
rec = exp.recency(run)
fig = plots.plot_metric_vs(rec, x="steps_before_end", hue="target", col="attack")
report.glue_figure("fig_recency", fig)
display(report.words(exp.members_per_window(run, "recency")))
display(exp.recency_table(exp.recency_effects(run)))
display(exp.control_table(exp.control_effects(run)))

# %% [markdown]
# ```{glue:figure} fig_recency
# AUC at the final checkpoint for members seen in windows ending 0, 1, 2, ... windows before the
# end of training (x: steps between the window's end and the final step); the recency control
# is drawn beside the targets. Each curve is one seed (the lab's own); the recency table and the
# verdict read the mean over each target's seeds, the control table the mean over the control's
# seeds, each paired with its target's seed of the same number (the same texts).
# ```
#
# (verdicts-training-size)=
# ## Verdicts
# Each claim gets a {term}`verdict` from the rule printed beside it. Every claim about the attacks,
# the book's control included, counts MIMIR's attacks; Min-K%++, which came after the paper, is shown
# beside them in the evidence. The recency claims are about an average effect: when too few units are
# clear one by one for the count to decide, the units' mean decides against its pooled standard error
# (the one the MDE beside each verdict comes from), as in the main results.

# %%
display(verdicts.publish(exp.verdicts(run), "training_size"))

# %% [markdown]
# **Reading the verdicts.** Starts near random: **{glue:text}`verdict_0`**; rises, then falls:
# **{glue:text}`verdict_1`**; more recently seen members easier (Figure 9):
# **{glue:text}`verdict_2`** (mean AUC of the most recent window minus the earliest, over
# targets and attacks: {glue:text}`recency_mean:+.3f`). Each target's effect is the mean over its
# seeds: each seed saw the documents in its own order, so its windows hold other members, and the
# three seeds read three times the texts of one. The first checkpoint read is step
# {glue:text}`first_step`, inside the lab's warm-up as the paper's step 1,000 is inside Pythia's; a
# rise before it cannot be read (the earlier windows are too small), so a curve that is already high
# there and falls says the lab's rise, if any, came earlier, not that there was none.
#
# **Does the schedule explain the lab's recency?** On the control, read where Pythia's step
# 99,000 sits in its schedule, recency is **{glue:text}`verdict_3`** (recent minus earliest
# {glue:text}`control_recency_mean:+.3f`, against {glue:text}`control_target_recency_mean:+.3f`
# for {glue:text}`control_target` on the same texts); that the end of the schedule weakens
# recency, i.e. the control's gap exceeds its target's (mean difference
# {glue:text}`gap_mean:+.3f`), is **{glue:text}`verdict_4`**. The last two are the book's own
# findings (the paper ran no such control). If the schedule were the whole story, the control
# would show the paper's recency while its target did not.
#
# How to read the sizes: the first window read, at step {glue:text}`first_step`, holds
# {glue:text}`n_first_text` members, so "near random" can be shown only when its interval fits
# within the rule's band; when it cannot, the rule says {term}`inconclusive` rather than guessing.
# The rise and the fall rest on half of the texts (the other half chooses the peak), so their
# intervals are wider than the figure's; that is the price of a peak that does not flatter the
# claim. The paper's first checkpoint read is step 1,000 of ~99,000 (Pythia also saved steps 1 to
# 512, which the paper does not read), inside Pythia's learning-rate warm-up (its first 1% of
# steps), which the paper offers as the reason for the near-random start. The lab's first read is
# step {glue:text}`first_step` of {glue:text}`n_steps`, inside its 20-step warm-up too, but a larger
# share of its run: its earlier checkpoints' windows are too small to read (see "Members in every
# window"), and one lab step is a far larger share of the data than one Pythia step.
# The paper's curves have no table (its Figures 2, 9 and 13 are plots); its text gives the
# shapes quoted at the top.
#
# ## Re-run it differently
# ```bash
# .venv/bin/python -m mimirlib.runner training_size -p window_fraction=0.05 -p 'targets=[target-h128]'
# .venv/bin/python -m mimirlib.runner training_size --list-params
# ```
#
# **With the paper's models.** This chapter has no `paper` profile: choosing members "from the
# 100 steps before a checkpoint" needs Pythia's batch order (the Pile's pre-tokenized, shuffled
# copy, ~300 GB, plus EleutherAI's batch viewer), which cannot be fetched offline. The lab's
# recorded data order stands in for it; the checkpoints themselves load by revision like
# Pythia's (`revision="step<N>"`), so the scoring code is the same.

# %% [markdown]
# ## Exercises
# Every exercise works on this chapter's own models and texts: what it needs is already in the
# signal cache. Write your prediction down before you open a solution.
#
# :::{exercise} Predict, then run: fewer attacks
# :label: ex-training_size-1
#
# Re-run the chapter with one attack only:
# ```bash
# .venv/bin/python -m mimirlib.runner training_size -p 'attacks=[loss]'
# ```
# Before you do, predict: does the {term}`LOSS attack`'s AUC of {glue:text}`ex_target` at its final
# checkpoint change, and how many texts will the scoring cell compute?
# :::
#
# :::{solution} ex-training_size-1
# :class: dropdown
#
# It does not change: {glue:text}`ex_loss_final:.3f` in both runs. Each attack is arithmetic on the
# same cached per-token signals of the same texts, so dropping the others changes neither the
# texts nor LOSS's scores; and the signals of every text are read from the cache, so the scoring
# cell reports 0 texts computed once this chapter has run.
# :::
#
# :::{exercise} Change a parameter: a narrower window of steps
# :label: ex-training_size-2
#
# Members of each checkpoint come from the last {glue:text}`window_pct`% of the run's
# steps before it. Halve that share:
# ```bash
# .venv/bin/python -m mimirlib.runner training_size -p window_fraction=0.05
# ```
# What do you expect of the members-per-window table, of the AUCs and of their intervals?
# :::
#
# :::{solution} ex-training_size-2
# :class: dropdown
#
# Look first at "Members in every window": a narrower window holds fewer distinct training texts,
# so some windows have fewer members than `samples` (windows too small to score are dropped).
# Members seen more recently are, if the recency effect holds, a little easier to detect; fewer
# members widen every interval. Read the rise-and-fall and recency tables for whether an effect
# stays beyond its paired interval and the seed sd.
# :::
#
# :::{exercise} Change a parameter: no seed replicates
# :label: ex-training_size-3
#
# Run the chapter without the seed replicates:
# ```bash
# .venv/bin/python -m mimirlib.runner training_size -p seed_replicates=false
# ```
# Which columns and verdicts change, and why?
# :::
#
# :::{solution} ex-training_size-3
# :class: dropdown
#
# The run is shorter (the replicates' checkpoints are not scored), but every comparative verdict
# of this chapter weighs a paired interval against the {term}`seed sd` (see "Where it starts, and
# the rise and fall, paired"). Without replicates this run cannot measure that spread: compare the
# seed sd columns and the rule column of the verdicts with this page's to see how the chapter
# handles a spread it did not measure, and why the replicates are worth their cost.
# :::

# %% tags=["hide-input"]
from mimirlib.teach import exercises

ex_target = run.targets[-1]
report.glue_values({"ex_target": ex_target,
                    "ex_loss_final": exercises.final_checkpoint_auc(by_step, ex_target, p.attacks[0])})

# %% [markdown]
# ## Self-check quiz
#
# **1.** The lab saves checkpoints at steps 1, 2, 4 and 8, but the chapter does not read them
# (see "Members in every window"). Why not?
#
# - (a) Their windows cover only the few steps trained so far and hold too few members: an AUC on
#   a handful of members can sit far from 0.5 by chance (or by a few easy texts), and its interval
#   is too wide to be near or far from anything. The paper's windows all hold its full sample.
# - (b) The attacks are disabled early in training.
# - (c) Early checkpoints are always near random, so there is nothing to measure.
#
# :::{dropdown} Answer
# (a). The paper's first read (step 1,000) draws 1,000 members from its 100-step window; the lab
# reads a checkpoint only when its window holds at least {glue:text}`min_members` members. Whether the
# first checkpoint read is near random is then a question the interval can answer: see "Where it
# starts".
# :::
#
# **2.** What does the recency control (`*-sched69`) isolate?
#
# - (a) The effect of model size.
# - (b) Whether recent members are easier because of where the learning-rate schedule ends, not
#   only because they were seen last.
# - (c) The effect of deduplication.
#
# :::{dropdown} Answer
# (b). See "Recency at the final checkpoint (Figure 9), and a control".
# :::
#
# **3.** Two checkpoints' AUCs differ by more than their paired interval but less than the seed sd.
#
# - (a) A clear effect.
# - (b) Not a clear effect: another training seed could move it as much.
# - (c) Impossible.
#
# :::{dropdown} Answer
# (b). A {term}`clear effect` needs both.
# :::
