"""Signals: what a model says about a text, computed once and cached on disk.

One batched forward pass per (model, window of a text) yields, for every predicted token ``t``:

- ``logprob[t]`` = log p(x_t | x_<t), the basis of LOSS, zlib, Min-K%, reference and neighbourhood;
- ``mean[t]`` = E_{v~p}[log p_v] and ``var[t]`` = Var_{v~p}[log p_v] over the whole next-token
  distribution, which Min-K%++ needs (and which cannot be recovered later without re-running).

**Every text is scored whole** (nothing is ever truncated): a text longer than the window is split
into sliding windows (:func:`windows`). The window defaults to the model's trained context
(:attr:`mimirlib.core.models.LoadedModel.context_length`: the lab's ``seq_len``, a hub model's
``max_position_embeddings``), the stride to half of it. Each token after the first is scored exactly
once, with at least ``window - stride`` tokens of left context once the text is longer than a window
(the reference implementation's rule, which fixes the window at 512 tokens and the stride at 256
whatever the model). The first token is never scored (nothing predicts it).

Every attack is then arithmetic on these arrays, so adding an attack, changing ``k`` or
re-executing a notebook costs no forward pass. The cache is one SQLite file per (model identity,
window, stride): writes are transactional, so an interrupted run leaves no half-written entry.
"""

from __future__ import annotations

import dataclasses

import hashlib
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np
import torch

from mimirlib.core.models import right_pad
from mimirlib.progress import progress
from mimirlib.paths import note_read


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
    """Signals on disk, one SQLite file per model identity and scoring window (length, stride).

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
        from mimirlib.paths import signals_dir

        return cls(signals_dir())

    def path_for(self, model_id: str, window: int, stride: int) -> Path:
        digest = hashlib.sha256(f"{model_id}|window={window}|stride={stride}".encode()).hexdigest()[:20]
        return self.root / f"{digest}.sqlite"

    def _connect(self, model_id: str, window: int, stride: int) -> sqlite3.Connection:
        path = self.path_for(model_id, window, stride)
        path.parent.mkdir(parents=True, exist_ok=True)
        note_read(path)
        try:
            con = sqlite3.connect(path, timeout=120)  # chapters run side by side (runner --jobs) may share a file
            con.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
            con.execute(
                "CREATE TABLE IF NOT EXISTS signals (h TEXT PRIMARY KEY, n INTEGER, logprob BLOB, mean BLOB, var BLOB)"
            )
            con.execute(
                "INSERT OR IGNORE INTO meta VALUES ('model_id', ?), ('window', ?), ('stride', ?)",
                (model_id, str(window), str(stride)),
            )
            con.commit()
        except sqlite3.DatabaseError as e:
            raise CacheCorrupted(
                f"signal cache {path} is unreadable ({e}); delete that file to "
                f"recompute its signals (other cache files are unaffected)"
            ) from None
        return con

    def get_many(self, model_id: str, window: int, stride: int, keys: Sequence[str]) -> dict[str, TokenSignals]:
        con = self._connect(model_id, window, stride)
        path = self.path_for(model_id, window, stride)
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

    def put_many(self, model_id: str, window: int, stride: int, items: dict[str, TokenSignals]) -> None:
        con = self._connect(model_id, window, stride)
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


class Span(NamedTuple):
    """One scoring window of a text: input tokens ``[begin, end)``, scoring tokens ``[first, end)``."""

    begin: int
    end: int
    first: int


def windows(n_tokens: int, window: int, stride: int) -> list[Span]:
    """The sliding windows that score tokens ``1 .. n_tokens - 1`` of a text, each exactly once.

    A text of at most ``window`` tokens is one window scoring every token after the first. A longer
    one starts with the full first window; each next window scores the next ``stride`` tokens (fewer
    at the end) and is ``window`` tokens long, ending at its last scored token, so every token it
    scores sees at least ``window - stride`` tokens of left context.
    """
    if n_tokens <= window:
        return [Span(0, n_tokens, 1)]
    spans = [Span(0, window, 1)]
    done = window
    while done < n_tokens:
        end = min(done + stride, n_tokens)
        spans.append(Span(end - window, end, done))
        done = end
    return spans


def resolve_window(loaded, window: int | None = None, stride: int | None = None) -> tuple[int, int]:
    """(window, stride) to score with: ``None`` means the model's trained context and half of it.

    Raises ValueError naming the bad value: a window needs at least 2 tokens, and ``1 <= stride <
    window`` (a stride equal to the window would leave a window's first token with no context).
    """
    w = loaded.context_length if window is None else window
    if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 2:
        raise ValueError(f"window must be an integer >= 2 (tokens per scoring window), got {w!r}")
    st = max(1, int(w) // 2) if stride is None else stride
    if isinstance(st, bool) or not isinstance(st, (int, np.integer)) or not 1 <= st < w:
        raise ValueError(f"stride must be an integer with 1 <= stride < window ({w}), got {st!r}")
    return int(w), int(st)


# Positions per chunk of the output layer and its vocabulary-wide reductions (measured on CPU, `make bench`):
# 256 for a wide head (Pythia-sized: 2x faster than 20); 64 for a narrow one, whose logits then stay in L2.
_CHUNK_ROWS = 256
_NARROW_HEAD_ROWS = 64
_NARROW_HEAD = 128
# Tokens per forward pass at most (``batch_size`` windows of 256 tokens, 8 of 512): on 2 CPU cores 8 windows
# of 512 ran 10% faster than 16 (activations that fit the cache).
_TOKENS_PER_PASS = 4096
# Causal LMs whose logits are exactly the output embeddings of the last hidden state (no scaling, capping or
# sliding window): their head runs on scored positions only (_forward_signals); others get full logits.
_PLAIN_HEAD_MODELS = frozenset({"GPTNeoXForCausalLM", "GPT2LMHeadModel", "LlamaForCausalLM"})


def _split_head(model):
    """(base model, output layer) when ``model`` is one of :data:`_PLAIN_HEAD_MODELS`, else None."""
    cls = type(model)
    if cls.__name__ not in _PLAIN_HEAD_MODELS or not cls.__module__.startswith("transformers."):
        return None
    base, head = getattr(model, "base_model", None), model.get_output_embeddings()
    if base is None or base is model or not isinstance(head, torch.nn.Linear):
        return None
    return base, head


def _vocab_signals(rows: torch.Tensor, target: torch.Tensor, head=None) -> tuple[torch.Tensor, ...]:
    """log p(target), E[log p] and Var[log p] for ``N`` positions (3 x [N]).

    ``rows`` are the positions' next-token logits ([N, V]), or, given ``head`` (the output layer), their
    last hidden states ([N, H]): the logits are then made chunk by chunk and reduced while in cache.
    The reductions run in float32 whatever the model's precision, in buffers allocated once per call
    (a fresh [chunk, V] tensor per step would fault its memory in every time), with one exponential
    per logit: with ``x`` the logits minus their maximum and ``S = sum(exp(x))``, ``log p = x - log S``,
    so ``E[log p] = E[x] - log S`` and ``Var[log p] = Var[x]``; ``p = softmax(x)`` and ``1 / S`` is its
    largest entry (``exp(0) / S``).
    """
    n = rows.shape[0]
    vocab = rows.shape[-1] if head is None else head.out_features
    step = _NARROW_HEAD_ROWS if head is not None and head.in_features <= _NARROW_HEAD else _CHUNK_ROWS
    size = min(step, n)
    x_buf = torch.empty(size, vocab, dtype=torch.float32, device=rows.device)
    p_buf = torch.empty(size, vocab, dtype=torch.float32, device=rows.device)
    low = head is not None and head.weight.dtype != torch.float32  # logits made in the model's precision
    head_buf = torch.empty(size, vocab, dtype=head.weight.dtype, device=rows.device) if low else None
    out = []
    for i in range(0, n, step):
        m = min(step, n - i)
        x = x_buf[:m]
        if head is None:
            logits = rows[i : i + m]
        else:
            logits = head_buf[:m] if low else x
            if head.bias is None:
                torch.mm(rows[i : i + m], head.weight.t(), out=logits)
            else:
                torch.addmm(head.bias, rows[i : i + m], head.weight.t(), out=logits)
        # x = logits - their maximum, in float32 (a low-precision chunk is copied first: converting,
        # then reducing and subtracting in float32, is ~1.7x faster than the mixed-precision pair)
        if logits is not x:
            x.copy_(logits)
        x.sub_(x.amax(-1, keepdim=True))
        p = torch.softmax(x, dim=-1, out=p_buf[:m])
        log_s = torch.log(p.amax(-1)).neg_()
        token_lp = x.gather(-1, target[i : i + m, None]).squeeze(-1) - log_s
        # E[x] and E[x^2], reusing p's buffer: p*x, then p*x^2.
        ex = p.mul_(x).sum(-1)
        ex2 = p.mul_(x).sum(-1)
        out.append((token_lp, ex - log_s, (ex2 - ex.square()).clamp_min(0.0)))
    return tuple(torch.cat(parts) for parts in zip(*out))


def _forward_signals(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, first: Sequence[int]) -> list:
    """Signals of one padded batch of windows (right padding): row ``r`` scores its tokens from
    in-window position ``first[r]`` to its last real token; context and pad positions are dropped
    before any vocabulary-wide work.

    For :data:`_PLAIN_HEAD_MODELS` the output layer runs on the scored positions only, and the base
    model gets no padding mask: with right padding a real token never attends to a pad under the causal
    mask alone (and positions count from 0 either way), so its hidden state is the same, and attention
    may skip the masked half."""
    with torch.inference_mode():
        lengths = attention_mask.sum(1).tolist()
        rows = torch.cat([torch.full((n - f,), r, dtype=torch.long) for r, (f, n) in enumerate(zip(first, lengths))])
        cols = torch.cat([torch.arange(f, n, dtype=torch.long) for f, n in zip(first, lengths)])
        rows, cols = rows.to(input_ids.device), cols.to(input_ids.device)
        parts = _split_head(model)
        if parts is None:
            logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
            signals = _vocab_signals(logits[rows, cols - 1], input_ids[rows, cols])
        else:
            base, head = parts
            hidden = base(input_ids=input_ids, use_cache=False).last_hidden_state
            signals = _vocab_signals(hidden[rows, cols - 1], input_ids[rows, cols], head)
        lp, mean, var = (t.cpu().numpy().astype(np.float32) for t in signals)
    bounds = np.cumsum([0] + [n - f for f, n in zip(first, lengths)])
    return [(lp[a:b], mean[a:b], var[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def score_ids(
    loaded, ids: Sequence[Sequence[int]], *, window: int, stride: int, batch_size: int, pad: int
) -> list[TokenSignals]:
    """Signals under ``loaded`` (a :class:`mimirlib.core.models.LoadedModel`) of tokenized texts (each of
    at least 2 token ids), every text whole: cut into :func:`windows`, run ``batch_size`` windows per
    forward pass (fewer when they are long: at most 4096 tokens a pass), windows sorted by length to
    minimise padding; ``pad`` fills the padding.

    This is the part of :func:`compute_signals` that needs the model: the ``ray`` engine
    (:mod:`mimirlib.core.engines`) runs it on its workers, the ``local`` engine in this process.
    """
    model, device = loaded.model, loaded.device
    spans = sorted(
        ((i, sp) for i in range(len(ids)) for sp in windows(len(ids[i]), window, stride)),
        key=lambda x: x[1].end - x[1].begin,
    )
    parts: dict[int, list] = {i: [] for i in range(len(ids))}
    per_pass = max(1, min(batch_size, _TOKENS_PER_PASS // window))
    for j in range(0, len(spans), per_pass):
        chunk = spans[j : j + per_pass]
        input_ids, mask = right_pad([ids[i][sp.begin : sp.end] for i, sp in chunk], pad)
        first = [sp.first - sp.begin for _, sp in chunk]
        out = _forward_signals(model, input_ids.to(device), mask.to(device), first)
        for (i, sp), arrays in zip(chunk, out):
            parts[i].append((sp.first, arrays))
    result = []
    for i in range(len(ids)):
        pieces = [a for _, a in sorted(parts[i], key=lambda x: x[0])]
        result.append(TokenSignals(*(np.concatenate(col) for col in zip(*pieces))))
    return result


def lookup(cache, model_id: str, window: int, stride: int, keys: Sequence[str]) -> tuple[dict, list[str]]:
    """``(found, todo)``: the cached entries of ``keys`` and the distinct keys still to compute, in
    first-seen order; the cache (if any) counts each key as a hit or a miss. ``cache=None``: all todo."""
    found = cache.get_many(model_id, window, stride, keys) if cache else {}
    todo = [k for k in dict.fromkeys(keys) if k not in found]
    if cache:
        missing = set(todo)
        cache.hits += sum(1 for k in keys if k not in missing)
        cache.misses += len(todo)
    return found, todo


def cache_note(hits: int, misses: int) -> str:
    """The one line a chapter prints about its signal cache (the classroom pack's re-run reads it)."""
    return f"signal cache: {hits} texts read from disk, {misses} computed"


@dataclass(frozen=True)
class ScoringOptions:
    """How texts are scored, passed whole from a chapter to every scoring call: the window and
    stride (``None``: the model's trained context, half of it), texts per batch, the weights'
    dtype when a chapter loads a model, where the passes run, and the signal cache."""

    window: int | None = None
    stride: int | None = None
    batch_size: int = 16
    dtype: str = "auto"
    engine: str = "local"
    ray_address: str | None = None
    cache: SignalCache | None = None

    def replace(self, **changes) -> "ScoringOptions":
        return dataclasses.replace(self, **changes)

    def signal_kwargs(self) -> dict:
        """The keywords of :func:`compute_signals` (everything but ``dtype``, which loading uses)."""
        return dict(
            cache=self.cache,
            window=self.window,
            stride=self.stride,
            batch_size=self.batch_size,
            engine=self.engine,
            ray_address=self.ray_address,
        )


def compute_signals(
    loaded,
    texts: Sequence[str],
    *,
    cache: SignalCache | None = None,
    window: int | None = None,
    stride: int | None = None,
    batch_size: int = 16,
    desc: str = "signals",
    engine="local",
    ray_address: str | None = None,
) -> list[TokenSignals]:
    """Signals for ``texts`` under ``loaded`` (a :class:`mimirlib.core.models.LoadedModel`), every text whole.

    Cached texts are read from disk; the rest are tokenized (never truncated), sorted by length and
    cut into batches of ``batch_size`` texts, each scored by :func:`score_ids` (``window``/``stride``:
    see :func:`resolve_window`). A text of ``n`` tokens always gets ``n - 1`` scored tokens (checked).
    A text needs at least two tokens (one prediction); shorter ones raise, naming the text.

    ``engine`` runs the forward passes: ``"local"`` in this process, ``"ray"`` on a Ray cluster
    (``ray_address``: ``None`` starts a local one, ``"auto"`` or ``"ray://..."`` joins one; see
    :mod:`mimirlib.core.engines`). Either way only this process writes the cache, one transaction per
    batch as it completes, so an interrupted run keeps what it finished.
    """
    from mimirlib.core.engines import map_batches, model_spec, resolve_engine

    runner = resolve_engine(engine, ray_address)  # a bad engine fails before any work
    window, stride = resolve_window(loaded, window, stride)
    keys = [text_key(t) for t in texts]
    model_id = loaded.cache_id
    found, todo = lookup(cache, model_id, window, stride, keys)
    if todo:
        by_key = {k: t for k, t in zip(keys, texts)}
        tok = loaded.tokenizer
        ids = tok([by_key[k] for k in todo], add_special_tokens=False, verbose=False)["input_ids"]
        for k, row in zip(todo, ids):
            if len(row) < 2:
                raise ValueError(f"text {by_key[k][:60]!r} has {len(row)} token(s); at least 2 are needed to score it")
        order = sorted(range(len(todo)), key=lambda i: len(ids[i]))
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        text_batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        shape = dict(window=window, stride=stride, batch_size=batch_size, pad=pad)
        label = f"{desc} ({Path(str(loaded.name)).name})"
        batch_ids = [[ids[i] for i in batch] for batch in text_batches]
        if runner is None:
            bar = progress(range(len(text_batches)), desc=label)
            results = ((b, score_ids(loaded, batch_ids[b], **shape)) for b in bar)
        else:
            costs = [sum(map(len, batch)) for batch in batch_ids]
            results = map_batches(runner, model_spec(loaded), score_ids, batch_ids, costs=costs, desc=label, **shape)
        with closing(results):
            for b, sigs in results:
                batch_items = {}
                for i, sig in zip(text_batches[b], sigs):
                    if len(sig) != len(ids[i]) - 1:  # every token after the first, exactly once
                        raise RuntimeError(
                            f"scored {len(sig)} of {len(ids[i]) - 1} tokens of text {by_key[todo[i]][:60]!r}"
                        )
                    batch_items[todo[i]] = sig
                found.update(batch_items)
                if cache:  # persist per batch: an interrupted run keeps what it finished
                    cache.put_many(model_id, window, stride, batch_items)
    return [found[k] for k in keys]
