"""Execute the book's notebooks: jupytext py:percent -> papermill -> ``book/executed/``.

Why a wrapper around papermill:

* papermill only *warns* on unknown parameters and never checks types; here
  both are errors, raised before any kernel starts, and so are names the
  chapter would only reject minutes later (unknown attacks, domains, lab
  targets, missing local model folders: ``check_names``);
* a run with other parameters than its profile's writes a *variant*
  (``book/variants/<stem>--<name>.ipynb``), never the published chapter,
  unless ``publish``; its page opens with a banner listing them and the
  command that reproduces it, and papermill's injected-parameters cell is
  collapsed (``hide-input``) on every page, so a page starts with its science;
* a run on another lab draw (``--draw N``: the profile read with its ``&draw`` anchor set to N, ``draw``
  set in the chapters that declare it) goes to ``book/draws/draw-N/``, never to the book's pages;
* papermill reads only ``.ipynb``; sources are jupytext ``py:percent`` files;
* papermill leaves a partial notebook at the output path on failure; here the
  output is written to a temporary file and moved into place only on success,
  so the book never renders a half-run chapter (the partial one goes to
  ``failed/``; one left by a run killed with SIGKILL is removed by the next);
* progress bars must reach the terminal, never the rendered HTML: the kernel
  gets ``TQDM_DISABLE=1`` and ``MIMIR_PROGRESS_FILE``, which this package tails
  to stderr while the notebook runs (see ``mimirlib.progress``).

Parameters live in the notebook's first code cell, tagged ``parameters``, one
``name = literal  # help`` (or ``name: type = literal  # help``) per line.

The modules, in the order a run goes through them: ``base`` (paths, errors), ``params``
(reading the parameters cell, validation), ``resolve`` (profile, params file, ``-p``),
``names`` (attacks, domains, models checked by name), ``variants`` (what a run changed, where
it goes, the finished notebook), ``plan`` (all of that, before anything starts), ``kernel``
(the kernel, its environment, the progress tail), ``execute`` (:func:`run_notebook`) and
``cli`` (``mimir-run``). This module is the package's public API.
"""

from mimirlib.runner.base import (
    DEFAULT_KERNEL,
    DRAWS_DIR,
    EXECUTED_DIR,
    PROFILES_DIR,
    REPO_ROOT,
    NotebookFailed,
    ParameterError,
    draw_dir,
    list_notebooks,
)
from mimirlib.runner.cli import main, schedule
from mimirlib.runner.execute import run_notebook
from mimirlib.runner.kernel import ensure_kernel
from mimirlib.runner.names import check_names
from mimirlib.runner.params import notebook_parameters, validate
from mimirlib.runner.plan import RunPlan, plan_run
from mimirlib.runner.resolve import resolve_params
from mimirlib.runner.variants import VARIANT_SEP

__all__ = [
    "ParameterError",
    "NotebookFailed",
    "notebook_parameters",
    "validate",
    "resolve_params",
    "run_notebook",
    "ensure_kernel",
    "list_notebooks",
    "main",
    "DEFAULT_KERNEL",
    "DRAWS_DIR",
    "EXECUTED_DIR",
    "PROFILES_DIR",
    "draw_dir",
    "REPO_ROOT",
    "VARIANT_SEP",
    "RunPlan",
    "check_names",
    "plan_run",
    "schedule",
]
