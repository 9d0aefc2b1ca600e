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
# # Running at scale
#
# Every chapter of this book runs on one machine against the lab. The paper's own setting
# {cite:p}`duan2024mimir` does not fit one: it scores five Pythia-dedup models from 160M to 12B
# parameters on seven domains of 2,000 texts each, the {term}`neighbourhood attack` adds 25
# forward passes per text and model, and an auditor who checks non-members against a training
# corpus must index billions of n-grams. This page says how to run the `paper` profile, or an
# audit, on a Ray cluster, what it costs, and where the measured scaling on this machine is.
# Nothing on this page loads a model: the cost table below is counted from the profile's own
# parameters by `mimirlib.experiments.costs` (tested in `tests/test_costs.py`).

# %% tags=["parameters", "hide-input"]
cost_profile = "paper"  # the profile whose chapters are costed (its notebooks: section)
tokens_per_text = 512  # tokens per scored text; 512 is the MIMIR benchmark's cap, so the table is an upper bound
utilisation = 0.4  # fraction of a GPU's peak bfloat16 rate that batched scoring reaches (an assumption)
bloom_fpr = 0.01  # design false-positive rate of the training corpus's Bloom filter (the audit's default)

# %% tags=["hide-input"]
from IPython.display import display

from mimirlib.experiments import costs
from mimirlib.experiments import running_at_scale as exp
from mimirlib.runner import saved
from mimirlib.display import report

p = exp.Params.from_cell(globals())

# %% [markdown]
# ## On a Ray cluster, step by step
#
# The signals engine sends batches of texts to Ray actors, one per GPU, each loading its model
# once; texts already in the signal cache are never sent, and only the driver writes the cache,
# so an interrupted run resumes where it stopped. The same commands work on one machine, where
# Ray starts a local cluster.
#
# 1. On every node: the same Python 3.11 environment with the `book` and `scale` extras
#    (`pip install -e ".[book,scale]"`: `scale` pins `ray`, `book` has the runner's papermill and
#    jupytext), network access to the Hugging Face hub and a token that has accepted the gated
#    `iamgroot42/mimir` dataset (`hf auth login`).
#    Models are loaded by hub name on every node; a local model folder must exist at the same
#    path on every node.
# 2. On the head node: `ray start --head --port=6379`.
# 3. On each GPU node: `ray start --address=HEAD_IP:6379`; `ray status` on the head lists
#    every GPU.
# 4. On the head node, run a chapter of the paper profile, or an audit:
#    ```bash
#    python -m mimirlib.runner main_results --profile paper -p engine=ray -p ray_address=auto
#    python -m mimirlib.audit --model EleutherAI/pythia-12b-deduped --revision step99000 \
#        --members members.jsonl --nonmembers nonmembers.jsonl --dtype bfloat16 \
#        --training-corpus 'pile/train/*.jsonl' --engine ray --ray-address auto --out audit-12b
#    ```
#    The audit reads the training corpus first (Bloom-filter index, bounded memory) and reports
#    how many non-members would fail MIMIR's {term}`decontamination` before any attack number.
#    The workers are one per GPU unless `-p ray_workers=N` (the audit's `--ray-workers N`) says
#    otherwise; `-p ray_gpus_per_worker=0.5` (`--ray-gpus-per-worker 0.5`) puts two on a GPU, and
#    `-p ray_timeout=S` (`--ray-timeout S`) bounds the wait for the head. The driver reads each
#    model's tokenizer and config; the weights are read by the workers, and by the driver only for
#    a pass it runs itself (the attacks after the paper that need gradients or a prefix).
# 5. `ray stop` on every node when done.
#
# When something goes wrong: a lost worker node's batches go to the surviving workers (the run
# stops only when no worker is left); a head that stops answering during a run stops it within about
# 10 s plus the connect timeout, with one line saying how many batches were done (those are in the
# signal cache, so a re-run resumes), and Ray's core prints none of its own lines on a joined
# cluster; an address that does not answer as a Ray head stops within
# the connect timeout (8 s; the audit's `--ray-timeout`) with one line naming the cause (a closed
# port, a port that is not the head's, a missing or refused token) and Ray's own output in a log file
# the line names. The local clusters the book starts write no `~/.ray/auth_token`, so they never
# switch token authentication on for a later `ray start`. With `--engine ray`, the audit's
# training-corpus index is built on the cluster too.
#
# On a cloud, Ray's cluster launcher starts the nodes from a file like the one below (`ray up
# cluster.yaml`, then `ray attach cluster.yaml` and step 4). **It is untested here**: this book is
# built on one machine with no network; instance types and the image are examples.
#
# ```yaml
# cluster_name: mimir-book
# max_workers: 4
# provider: {type: aws, region: us-east-1}
# available_node_types:
#   head: {node_config: {InstanceType: m5.2xlarge}, resources: {}, min_workers: 0, max_workers: 0}
#   gpu: {node_config: {InstanceType: p4d.24xlarge}, min_workers: 1, max_workers: 4}
# head_node_type: head
# file_mounts: {"~/mimir-book": "."}
# setup_commands:
#   - cd ~/mimir-book && pip install -e ".[book,scale]"
# ```

# %% [markdown]
# ## What it costs
#
# Each text a chapter scores is one forward pass of each model that scores it (LOSS, zlib, Min-K%
# and Min-K%++ share one pass; the {term}`reference attack` adds one pass of the reference model;
# the neighbourhood attack one pass per neighbour, which the MIMIR dataset ships, so no masked-LM
# pass is counted). A pass over T tokens of a model with N parameters costs about 2 N T FLOPs;
# GPU-hours divide by the GPU's dense bfloat16 peak times the stated utilisation. First each
# chapter on its own, then each model over all chapters with the shared signal cache (a text
# two chapters score is computed once). The passes and FLOPs of a table's row, and its GPU-hours:
#
# ```{literalinclude} /mimirlib/experiments/costs.py
# :pyobject: flops
# ```
#
# ```{literalinclude} /mimirlib/experiments/costs.py
# :pyobject: gpu_hours
# ```

# %%
run = exp.run(p)
display(costs.display_table(run.chapters).set_index(["chapter", "model"]))
display(costs.display_table(run.models).set_index("model"))

# %% tags=["remove-cell"]
saved.keep(exp, p, run=run)  # for the handouts: mimirlib.runner.saved

# %% tags=["hide-input"]
report.glue_values(exp.prose_numbers(run))

# %% [markdown]
# With at most {glue:text}`cost_tokens` tokens a text and {glue:text}`cost_util` utilisation,
# the whole profile is {glue:text}`cost_passes` forward passes, {glue:text}`cost_flops` FLOPs:
# about {glue:text}`cost_a100` A100-hours or {glue:text}`cost_h100` H100-hours. Passes split
# evenly over GPUs, so eight GPUs take about an eighth of the wall time (each model must fit one
# GPU: 12B parameters in bfloat16 are 24 GB of weights).
#
# ## The training corpus at scale
#
# The {term}`n-gram overlap` index hashes every word, then every n-gram with a rolling hash over
# the word hashes, in loops compiled by numba (no Python loop per word or n-gram), into a blocked {term}`Bloom filter` sized for a
# {glue:text}`bloom_fpr` false-positive rate, {glue:text}`bloom_bytes` bytes per n-gram: a
# 100-billion-n-gram corpus needs about {glue:text}`bloom_100g` GB of filter. It is built in
# shards, on a process pool or on Ray
# (`mimirlib.core.ngrams.build_sharded`), and the shards' filters merge by a bitwise OR into exactly
# the filter one process would have built.
#
# ## Measured scaling on this machine
#
# The benchmarks print the rates measured on the machine they run on (the book does not run them:
# they take minutes and their figures are the machine's, not the method's). They time the lab's
# model shapes and texts (a built lab is needed: `make lab PROFILE=smoke` for the engine's), so
# they show how the engines scale on a machine, not your model's rate:
# ```bash
# make bench-scale                            # both below, in one run
# python scripts/bench_engine.py              # signals: the local engine vs Ray with 1 and 2 workers, same texts
# python scripts/bench_ngrams.py --copies 4   # n-gram index: vectorised vs loop, Bloom vs exact, 1 and 2 shards, memory
# python scripts/bench_signals.py             # forward passes: the engine vs the reference loop
# ```

# %% [markdown]
# ## Exercises
# These exercises re-run this page's cost model, which is arithmetic on the profile's parameters:
# no model is loaded. Write your prediction down before you open a solution.
#
# :::{exercise} Predict, then run: half the utilisation
# :label: ex-running_at_scale-1
#
# The GPU-hours assume that batched scoring reaches {glue:text}`cost_util` of a GPU's peak rate.
# Predict the A100-hours of the whole profile if it reaches only half of that, then run (for the
# default 40%)
# ```bash
# .venv/bin/python -m mimirlib.runner running_at_scale -p utilisation=0.2
# ```
# :::
#
# :::{solution} ex-running_at_scale-1
# :class: dropdown
#
# About {glue:text}`ex_a100_half` A100-hours instead of {glue:text}`cost_a100`: the hours are the
# FLOPs divided by the rate actually reached, so halving the utilisation doubles them, and the
# forward passes and FLOPs do not change. Utilisation is an assumption of the model, stated as a
# parameter: measure it on your cluster before budgeting (score a few hundred texts of your model
# with the chapter's engine, then divide the FLOPs they took by the seconds and by the card's peak).
# :::
#
# :::{exercise} Change a parameter: shorter texts
# :label: ex-running_at_scale-2
#
# Re-run the cost model with texts of at most 256 tokens:
# ```bash
# .venv/bin/python -m mimirlib.runner running_at_scale -p tokens_per_text=256
# ```
# Which columns of the tables change, and which do not?
# :::
#
# :::{solution} ex-running_at_scale-2
# :class: dropdown
#
# The forward passes do not change (one per text and model, whatever its length); FLOPs and
# GPU-hours halve, since a pass over T tokens costs about 2 N T FLOPs. The tables are an upper
# bound at the benchmark's cap: texts shorter than the cap cost less.
# :::
#
# :::{exercise} Predict, then run: a tighter Bloom filter
# :label: ex-running_at_scale-3
#
# The training corpus's Bloom filter is sized for {glue:text}`bloom_fpr` false positives,
# {glue:text}`bloom_bytes` bytes per n-gram. Predict its size for ten times fewer false positives,
# then run
# ```bash
# .venv/bin/python -m mimirlib.runner running_at_scale -p bloom_fpr=0.001
# ```
# :::

# %% tags=["hide-input"]
report.glue_values(exp.exercise_numbers(run))

# %% [markdown]
# :::{solution} ex-running_at_scale-3
# :class: dropdown
#
# {glue:text}`ex_bloom_bytes_tenth` bytes per n-gram instead of {glue:text}`bloom_bytes`. A classic
# Bloom filter's bits per item grow with the logarithm of one over its false-positive rate (the
# same few bits more for each tenfold reduction). This index's filter is *blocked* (each n-gram sets its k bits
# in one 64-bit word, so a query reads one word), and a 64-bit block caps k and crowds the bits, so
# each tenfold reduction costs it more than that rule (`bloom.bloom_geometry` computes the
# geometry from the exact occupancy of a block). Still far from ten times the memory: cheap
# insurance at corpus scale, where every false positive inflates a non-member's measured overlap.
# :::
#
# ## Self-check quiz
#
# **1.** Two chapters score the same text with the same model. How many forward passes does the
# whole profile pay for it?
#
# - (a) Two.
# - (b) One: the signal cache keys by (model, window, stride) and text, so the second chapter reads
#   the first one's signals.
#
# :::{dropdown} Answer
# (b). Compare the per-chapter table with the per-model totals above.
# :::
#
# **2.** Eight GPUs instead of one: what changes?
#
# - (a) The GPU-hours fall eightfold.
# - (b) The wall time falls about eightfold; the GPU-hours stay the same, since the passes split
#   evenly over the GPUs.
#
# :::{dropdown} Answer
# (b).
# :::
#
# **3.** Why does a Bloom filter over-report n-gram overlap, and never under-report it?
#
# - (a) A hash collision can report an unseen n-gram as seen; a seen n-gram always finds its bits
#   set.
# - (b) It drops rare n-grams.
#
# :::{dropdown} Answer
# (a). The n-gram overlap chapter measures the excess against the exact index.
# :::
