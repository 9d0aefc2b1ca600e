"""Signals: what a model says about a text, computed once and cached on disk.

One batched forward pass per (model, text) yields, for every predicted token ``t``:

- ``logprob[t]`` = log p(x_t | x_<t), the basis of LOSS, zlib, Min-K%, reference and neighbourhood;
- ``mean[t]`` = E_{v~p}[log p_v] and ``var[t]`` = Var_{v~p}[log p_v] over the whole next-token
  distribution, which Min-K%++ needs (and which cannot be recovered later without re-running).

Every attack is then arithmetic on these arrays, so adding an attack, changing ``k`` or
re-executing a notebook costs no forward pass. The cache is one SQLite file per (model identity,
max_length): writes are transactional, so an interrupted run leaves no half-written entry.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from .progress import progress


class CacheCorrupted(RuntimeError):
    """The on-disk signal cache cannot be read; the message names the file and the fix."""


@dataclass(frozen=True)
class TokenSignals:
    """Per-token signals of one text under one model (arrays of equal length, float32)."""

    logprob: np.ndarray
    mean: np.ndarray
    var: np.ndarray

    def __len__(self) -> int:
        return len(self.logprob)

    @property
    def nll(self) -> float:
        """Mean negative log-likelihood per token (the paper's loss L(x; M))."""
        return float(-self.logprob.mean())


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SignalCache:
    """Signals on disk, one SQLite file per model identity and truncation length.

    ``hits``/``misses`` count texts served from disk versus computed: tests and the book use
    them to show that a re-run does no new forward pass.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    @classmethod
    def default(cls) -> "SignalCache":
        """The project's signal cache (``paths.signals_dir()``), shared by every chapter and command."""
        from .paths import signals_dir

        return cls(signals_dir())

    def path_for(self, model_id: str, max_length: int) -> Path:
        digest = hashlib.sha256(f"{model_id}|{max_length}".encode()).hexdigest()[:20]
        return self.root / f"{digest}.sqlite"

    def _connect(self, model_id: str, max_length: int) -> sqlite3.Connection:
        path = self.path_for(model_id, max_length)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            con = sqlite3.connect(path)
            con.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
            con.execute(
                "CREATE TABLE IF NOT EXISTS signals (h TEXT PRIMARY KEY, n INTEGER, logprob BLOB, mean BLOB, var BLOB)"
            )
            con.execute(
                "INSERT OR IGNORE INTO meta VALUES ('model_id', ?), ('max_length', ?)", (model_id, str(max_length))
            )
            con.commit()
        except sqlite3.DatabaseError as e:
            raise CacheCorrupted(
                f"signal cache {path} is unreadable ({e}); delete that file to "
                f"recompute its signals (other cache files are unaffected)"
            ) from None
        return con

    def get_many(self, model_id: str, max_length: int, keys: Sequence[str]) -> dict[str, TokenSignals]:
        con = self._connect(model_id, max_length)
        path = self.path_for(model_id, max_length)
        out: dict[str, TokenSignals] = {}
        try:
            uniq = list(dict.fromkeys(keys))
            for i in range(0, len(uniq), 500):
                chunk = uniq[i : i + 500]
                q = f"SELECT h, n, logprob, mean, var FROM signals WHERE h IN ({','.join('?' * len(chunk))})"
                for h, n, lp, mu, var in con.execute(q, chunk):
                    arrays = [np.frombuffer(b, dtype=np.float32) for b in (lp, mu, var)]
                    if any(len(a) != n for a in arrays):
                        raise CacheCorrupted(
                            f"signal cache {path}: entry {h[:12]} has inconsistent "
                            f"lengths; delete that file to recompute"
                        )
                    out[h] = TokenSignals(*arrays)
        except sqlite3.DatabaseError as e:
            raise CacheCorrupted(
                f"signal cache {path} is unreadable ({e}); delete that file to recompute its signals"
            ) from None
        finally:
            con.close()
        return out

    def put_many(self, model_id: str, max_length: int, items: dict[str, TokenSignals]) -> None:
        con = self._connect(model_id, max_length)
        try:
            with con:  # one transaction: all or nothing
                con.executemany(
                    "INSERT OR REPLACE INTO signals VALUES (?, ?, ?, ?, ?)",
                    [
                        (
                            h,
                            len(s),
                            s.logprob.astype(np.float32).tobytes(),
                            s.mean.astype(np.float32).tobytes(),
                            s.var.astype(np.float32).tobytes(),
                        )
                        for h, s in items.items()
                    ],
                )
        finally:
            con.close()


def _forward_signals(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> list[TokenSignals]:
    """Signals for one padded batch (right padding); pad positions are dropped, never scored."""
    with torch.inference_mode():
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()
        logp = torch.log_softmax(logits, dim=-1)
        target = input_ids[:, 1:]
        token_lp = logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        # Two reductions over the vocabulary, reusing one buffer: p*log p, then p*(log p)^2.
        plogp = logp.exp().mul_(logp)
        mean = plogp.sum(-1)
        var = (plogp.mul_(logp).sum(-1) - mean.square()).clamp_min(0.0)
        valid = attention_mask[:, 1:].bool()
    out = []
    for i in range(input_ids.shape[0]):
        m = valid[i]
        out.append(
            TokenSignals(
                token_lp[i][m].cpu().numpy().astype(np.float32),
                mean[i][m].cpu().numpy().astype(np.float32),
                var[i][m].cpu().numpy().astype(np.float32),
            )
        )
    return out


def compute_signals(
    loaded,
    texts: Sequence[str],
    *,
    cache: SignalCache | None = None,
    max_length: int = 512,
    batch_size: int = 16,
    desc: str = "signals",
) -> list[TokenSignals]:
    """Signals for ``texts`` under ``loaded`` (a :class:`mimirlib.models.LoadedModel`).

    Cached texts are read from disk; the rest are tokenized (truncated to ``max_length``),
    sorted by length to minimise padding, and run in batches. A text needs at least two
    tokens (one prediction); shorter ones raise, naming the text.
    """
    keys = [text_key(t) for t in texts]
    model_id = loaded.cache_id
    found = cache.get_many(model_id, max_length, keys) if cache else {}
    todo = [k for k in dict.fromkeys(keys) if k not in found]
    if cache:
        cache.hits += len(keys) - sum(1 for k in keys if k in todo)
        cache.misses += len(todo)
    if todo:
        by_key = {k: t for k, t in zip(keys, texts)}
        tok = loaded.tokenizer
        enc = tok([by_key[k] for k in todo], truncation=True, max_length=max_length, add_special_tokens=False)
        ids = enc["input_ids"]
        for k, row in zip(todo, ids):
            if len(row) < 2:
                raise ValueError(f"text {by_key[k][:60]!r} has {len(row)} token(s); at least 2 are needed to score it")
        order = sorted(range(len(todo)), key=lambda i: len(ids[i]))
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        computed: dict[str, TokenSignals] = {}
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        for batch in progress(batches, desc=f"{desc} ({Path(str(loaded.name)).name})"):
            width = max(len(ids[i]) for i in batch)
            input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for r, i in enumerate(batch):
                input_ids[r, : len(ids[i])] = torch.tensor(ids[i])
                mask[r, : len(ids[i])] = 1
            sigs = _forward_signals(loaded.model, input_ids.to(loaded.device), mask.to(loaded.device))
            batch_items = {todo[i]: s for i, s in zip(batch, sigs)}
            computed.update(batch_items)
            if cache:  # persist per batch: an interrupted run keeps what it finished
                cache.put_many(model_id, max_length, batch_items)
        found.update(computed)
    return [found[k] for k in keys]
