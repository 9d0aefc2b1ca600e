"""Where the project keeps what it computes: one root (``$MIMIR_CACHE`` or ``.cache``) and its folders.

Chapters and commands ask this module for a folder instead of joining paths themselves, so the
layout changes in one place.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$MIMIR_CACHE`` or ``.cache`` beside the project (never inside the installed package)."""
    return Path(os.environ.get("MIMIR_CACHE", Path.cwd() / ".cache"))


def signals_dir() -> Path:
    """The on-disk signal cache (per-token log-probabilities per model and text)."""
    return cache_root() / "signals"


def audit_demo_dir(domain: str) -> Path:
    """Where the audit chapter writes its demonstration member/non-member files for ``domain``."""
    return cache_root() / "audit-demo" / domain


def audit_report_dir() -> Path:
    """The audit chapter's default report folder."""
    return cache_root() / "audit-report"
