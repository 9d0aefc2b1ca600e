"""A masked LM's vocabulary as the samplers see it: the text each id splices in, its swap class,
and which ids may replace a token of each class (WordPiece, byte-level BPE or SentencePiece)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["WHITESPACE", "Vocab", "is_punctuation", "token_class", "vocab_info"]

#: Any whitespace character: a token holding one cannot be swapped without moving whitespace.
WHITESPACE = re.compile(r"\s")


def is_punctuation(ch: str) -> bool:
    """BERT's definition: ASCII non-alphanumeric symbols, or Unicode category P*."""
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def token_class(core: str, continuation: bool, wordpiece: bool) -> int:
    """Swap class: a token is only replaced by one of the same class, so the re-tokenised
    neighbour keeps the original's word grid (no "paragraph." -> "paragraphcedex").

    WordPiece: 0 word start, 1 ## continuation, 2 one punctuation mark, 3 anything else
    (e.g. "[unused0]", never produced from text). Other schemes (byte-level BPE,
    SentencePiece): the kind of the first character, letter 0 / digit 1 / other 2, plus 3
    when the token carries the leading space ("Ġthe", "▁the").
    """
    if not core:
        return 3
    if wordpiece:
        punct = [is_punctuation(ch) for ch in core]
        if continuation:
            return 3 if any(punct) else 1
        if len(core) == 1 and punct[0]:
            return 2
        return 3 if any(punct) else 0
    first = core[0]
    kind = 0 if first.isalpha() else 1 if first.isdigit() else 2
    return kind + (0 if continuation else 3)


@dataclass(frozen=True, eq=False)
class Vocab:
    """Per-id text to splice in (`core`), swap class, and which ids may be sampled per class."""

    core: list[str]
    klass: np.ndarray  # swap class of each id, see token_class
    allowed: torch.Tensor  # [n_classes, V] bool: samplable ids for each class

    @property
    def wordpiece(self) -> bool:
        """True for a WordPiece vocabulary (4 swap classes; other schemes have 6)."""
        return self.allowed.shape[0] == 4


def vocab_info(tokenizer, n_logits: int) -> Vocab:
    """`tokenizer`'s vocabulary for a model with `n_logits` outputs. Never samplable: special
    tokens, empty ones, and ones holding whitespace, U+FFFD or a special token's text."""
    n_tok = min(len(tokenizer), n_logits)
    tokens = tokenizer.convert_ids_to_tokens(list(range(n_tok)))
    backend_model = tokenizer.backend_tokenizer.model
    prefix = getattr(backend_model, "continuing_subword_prefix", None)
    if type(backend_model).__name__ == "WordPiece" and prefix:
        cont = [t.startswith(prefix) for t in tokens]
        core = [t[len(prefix) :] if c else t for t, c in zip(tokens, cont)]
        klass = [token_class(c, k, True) for c, k in zip(core, cont)]
        n_classes = 4
    else:
        decoded = tokenizer.backend_tokenizer.decode_batch([[i] for i in range(n_tok)], skip_special_tokens=False)
        spaced = [t.startswith(("\u0120", "\u2581")) or d[:1].isspace() for t, d in zip(tokens, decoded)]
        core = [d.lstrip() for d in decoded]
        klass = [token_class(c, not sp, False) for c, sp in zip(core, spaced)]
        n_classes = 6
    klass = np.array(klass, dtype=np.int64)
    special = set(tokenizer.all_special_ids)
    special_strings = [s for s in tokenizer.all_special_tokens if s]
    ok = np.array(
        [
            i not in special
            and bool(c)
            and not WHITESPACE.search(c)
            and "\ufffd" not in c
            and not any(s in c for s in special_strings)
            for i, c in enumerate(core)
        ],
        dtype=bool,
    )
    allowed = torch.zeros((n_classes, n_logits), dtype=torch.bool)
    for k in range(n_classes):
        allowed[k, :n_tok] = torch.from_numpy(ok & (klass == k))
    return Vocab(core=core, klass=klass, allowed=allowed)
