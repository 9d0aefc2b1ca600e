"""Masked-LM neighbours for the neighbourhood attack (Mattern et al., 2023).

The paper (MIMIR, App. A.4) makes 25 neighbours per text with BERT, replacing 5% of the
tokens "in place". No BERT can be downloaded in the embedded lab, so `train_masked_lm`
trains a small BERT-style masked LM on the lab's own corpus; `load_masked_lm` loads either
that folder or a real hub model (``bert-base-uncased``) through the same ``from_pretrained``
code, and `generate_neighbors` works with both.

Variant implemented ("joint-mask, in-place swap"): for each neighbour, k =
round(mask_fraction * n) positions are drawn among the n real tokens of the text (k >= 1);
all k are replaced by ``[MASK]`` in one forward pass, and each is filled with a token
sampled from the MLM's distribution at that position, excluding the original token,
special tokens, and tokens of another swap class (a ``##`` continuation piece only
replaces a continuation piece, a word start a word start, a punctuation mark a
punctuation mark), so the neighbour splits into the same words as the original. The
sampled token's text is spliced into the *original string* at the replaced token's
character offsets (MIMIR's ``original_tokenization_swap``), so everything else, case,
whitespace, newlines, indentation, and the text beyond the tokenizer window, stays
byte-identical.
Differences from the MIMIR code: it counts [CLS]/[SEP] in n and truncates (int) rather
than rounds; it scores positions one at a time with embedding dropout (p=0.7) instead of
[MASK], and keeps the highest-scoring swaps rather than sampling. Here each neighbour
costs one forward pass, batched across neighbours and texts, instead of one forward pass
per token of the text; neighbours of a short text may repeat (nothing deduplicates them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import time
import unicodedata
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from .fsutil import staged_dir
from .hub import is_local_path
from .progress import progress as progress_bar

__all__ = ["SPECIAL_TOKENS", "train_masked_lm", "load_masked_lm", "generate_neighbors"]

#: Special tokens of the lab tokenizer, in id order (BERT's names).
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

_TRAINING_INFO = "mlm_training.json"
_WHITESPACE = re.compile(r"\s")


# --------------------------------------------------------------------------- progress


def _progress_factory(progress) -> Callable[..., Any]:
    """Bar factory: False disables, a callable is used as is, None (or True) picks the project's
    terminal-only bar, `mimirlib.progress.progress(iterable=None, total=None, desc="")`.
    """
    if progress is False:
        return lambda iterable=None, total=None, desc="": _NullBar()
    if callable(progress):
        return progress
    if progress not in (None, True):
        raise TypeError(f"progress must be None, True, False or a callable, not {progress!r}")
    return progress_bar


class _NullBar:
    def update(self, n=1):
        pass

    def set_postfix(self, *args, **kwargs):
        pass

    def close(self):
        pass


def _as_text_list(texts) -> list:
    """Any iterable of texts (list, tuple, pandas Series), but not one bare string."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be a list of strings, not a single string")
    try:
        return list(texts)
    except TypeError:
        raise TypeError(f"texts must be a list of strings, not {type(texts).__name__}") from None


# --------------------------------------------------------------------------- training


@contextlib.contextmanager
def _deterministic_torch(seed: int):
    """Seed torch and turn on deterministic kernels, restoring the caller's state after.

    fork_rng keeps the caller's global RNG stream untouched; warn_only because on CPU the
    kernels used here are deterministic anyway and an error would only break callers.
    """
    prev = torch.are_deterministic_algorithms_enabled()
    prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.use_deterministic_algorithms(True, warn_only=True)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(prev, warn_only=prev_warn)


def _learn_wordpiece_vocab(
    counts: dict[str, int], vocab_size: int, *, min_frequency: int = 2, limit_alphabet: int = 1000
) -> dict[str, int]:
    """WordPiece vocabulary by BPE merges, as the `tokenizers` WordPiece trainer does, but
    deterministic: that trainer breaks count ties by ids handed out in hash-map order, so
    two runs on the same texts give different vocabularies. Ties here go to the earlier ids.
    """
    import heapq
    from collections import Counter, defaultdict

    prefix = "##"
    char_counts: Counter = Counter()
    for word, c in counts.items():
        for ch in word:
            char_counts[ch] += c
    alphabet = set(sorted(char_counts, key=lambda ch: (-char_counts[ch], ch))[:limit_alphabet])
    symbols = list(SPECIAL_TOKENS)
    index = {s: i for i, s in enumerate(symbols)}

    def sym(s: str) -> int:
        if s not in index:
            index[s] = len(symbols)
            symbols.append(s)
        return index[s]

    words, freqs = [], []
    for word in sorted(counts):
        if any(ch not in alphabet for ch in word):
            continue  # WordPiece maps such a word to [UNK] whatever the vocabulary
        words.append([sym(word[0])] + [sym(prefix + ch) for ch in word[1:]])
        freqs.append(counts[word])

    pair_count: defaultdict = defaultdict(int)
    where: defaultdict = defaultdict(set)
    for wi, ids in enumerate(words):
        for q in zip(ids, ids[1:]):
            pair_count[q] += freqs[wi]
            where[q].add(wi)
    heap = [(-c, q) for q, c in pair_count.items()]
    heapq.heapify(heap)
    while len(symbols) < vocab_size and heap:
        neg, pair = heapq.heappop(heap)
        count = pair_count.get(pair, 0)
        if count != -neg:
            continue  # stale entry: the current count was pushed when it changed
        if count < min_frequency:
            break
        a, b = pair
        new = sym(symbols[a] + symbols[b][len(prefix):])
        changed = set()
        for wi in where.pop(pair):
            ids, f = words[wi], freqs[wi]
            for q in zip(ids, ids[1:]):
                pair_count[q] -= f
            merged, i = [], 0
            while i < len(ids):
                if i + 1 < len(ids) and ids[i] == a and ids[i + 1] == b:
                    merged.append(new)
                    i += 2
                else:
                    merged.append(ids[i])
                    i += 1
            words[wi] = merged
            for q in zip(merged, merged[1:]):
                pair_count[q] += f
                where[q].add(wi)
            changed.update(zip(ids, ids[1:]))
            changed.update(zip(merged, merged[1:]))
        pair_count.pop(pair, None)
        for q in changed:
            c = pair_count.get(q, 0)
            if c > 0 and q != pair:
                heapq.heappush(heap, (-c, q))
    return {s: i for i, s in enumerate(symbols)}


def _train_wordpiece(texts: Sequence[str], vocab_size: int, max_len: int):
    """A cased BERT-style WordPiece tokenizer (see `train_masked_lm` for why WordPiece)."""
    from collections import Counter

    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False
    )
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    counts: Counter = Counter()
    for text in texts:
        counts.update(w for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)))
    vocab = _learn_wordpiece_vocab(counts, vocab_size)
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]", continuing_subword_prefix="##"))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.WordPiece(prefix="##")
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return tok, PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=max_len,
    )


def _windows(tok, texts: Sequence[str], max_len: int) -> list[list[int]]:
    """Each text as consecutive windows of max_len tokens ([CLS] ... [SEP]): nothing is cut off."""
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    body = max_len - 2
    out = []
    for enc in tok.encode_batch(list(texts), add_special_tokens=False):
        ids = enc.ids
        for start in range(0, len(ids), body):
            out.append([cls_id, *ids[start : start + body], sep_id])
    return out


def _mask_batch(input_ids, attention_mask, *, mask_id, n_special, vocab, generator):
    """BERT's 15% masking (80% [MASK], 10% random, 10% kept), >= 1 target per row."""
    real = attention_mask.bool() & (input_ids >= n_special)
    chosen = (torch.rand(input_ids.shape, generator=generator) < 0.15) & real
    # a row with no target contributes nothing; give it one so every window teaches something
    empty = ~chosen.any(dim=1) & real.any(dim=1)
    if empty.any():
        scores = torch.rand(input_ids.shape, generator=generator).masked_fill(~real, -1.0)
        first = scores.argmax(dim=1)
        rows = empty.nonzero().squeeze(1)
        chosen[rows, first[rows]] = True
    labels = input_ids.masked_fill(~chosen, -100)
    inputs = input_ids.clone()
    draw = torch.rand(input_ids.shape, generator=generator)
    inputs[chosen & (draw < 0.8)] = mask_id
    randomise = chosen & (draw >= 0.8) & (draw < 0.9)
    inputs[randomise] = torch.randint(n_special, vocab, input_ids.shape, generator=generator)[randomise]
    return inputs, labels


def train_masked_lm(
    texts: list[str],
    out_dir,
    *,
    vocab_size: int = 8000,
    hidden: int = 128,
    layers: int = 2,
    heads: int = 2,
    max_len: int = 256,
    epochs: int = 1,
    batch_size: int = 32,
    lr: float = 5e-4,
    seed: int = 0,
    progress=None,
) -> Path:
    """Train a small BERT-style masked LM on `texts` and save it to `out_dir`; returns the path.

    Stands in for BERT (the paper's masker), which cannot be downloaded offline. The folder
    holds config.json, model.safetensors, tokenizer.json/tokenizer_config.json and
    mlm_training.json, so `load_masked_lm(out_dir)` uses the same `from_pretrained` path as
    a hub name. It is written to a temporary sibling first and moved into place with
    `os.replace`: a crash never leaves a half-written model.

    Tokenizer: cased WordPiece (BERT's normaliser without lowercasing or accent stripping,
    BERT's whitespace+punctuation pre-tokenizer), rather than byte-level BPE, because
    neighbours are spliced into the original string at token offsets: WordPiece tokens
    never contain whitespace and are whole characters, so a swap replaces one word piece
    and leaves every space, newline and indent in place, while byte-level BPE tokens carry
    whitespace ("Ġthe", "ĊĠĠĠ") and can be partial UTF-8 bytes that decode to U+FFFD.
    It is also BERT's own scheme, so the lab and `bert-base-uncased` share one code path.
    The vocabulary is learnt by `_learn_wordpiece_vocab` (the same BPE-merge procedure as
    the `tokenizers` WordPiece trainer, which differs from run to run); the normaliser,
    pre-tokenizer, model and decoder are the `tokenizers` library's own.

    Texts longer than max_len tokens are split into consecutive windows (nothing is
    dropped). Standard BERT masking (15%: 80/10/10), AdamW with 10% linear warm-up and
    linear decay, gradient clipping at 1.0. Deterministic under `seed` on one machine:
    seeded init, data order and masking, deterministic kernels; the caller's global torch
    RNG state is restored afterwards. `progress`: None uses `mimirlib.progress.progress`,
    False disables, or a callable `(iterable=None, total=None, desc="")`.
    """
    from transformers import BertConfig, BertForMaskedLM

    out_dir = Path(out_dir)
    texts = _as_text_list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] is {type(t).__name__}, not str")
    if not any(t.strip() for t in texts):
        raise ValueError("texts holds no non-blank text to train the masked LM on")
    for name, value, low in (("vocab_size", vocab_size, len(SPECIAL_TOKENS) + 1), ("hidden", hidden, 1),
                             ("layers", layers, 1), ("heads", heads, 1), ("max_len", max_len, 8),
                             ("epochs", epochs, 1), ("batch_size", batch_size, 1)):
        if not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be divisible by heads ({heads})")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    if out_dir.exists() and not out_dir.is_dir():
        raise FileExistsError(f"out_dir {str(out_dir)!r} exists and is not a folder")

    started = time.perf_counter()
    bar_factory = _progress_factory(progress)
    with _deterministic_torch(seed):
        raw_tok, tokenizer = _train_wordpiece(texts, vocab_size, max_len)
        windows = _windows(raw_tok, texts, max_len)
        vocab = len(tokenizer)
        config = BertConfig(
            vocab_size=vocab,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=4 * hidden,
            max_position_embeddings=max_len,
            pad_token_id=tokenizer.pad_token_id,
        )
        model = BertForMaskedLM(config)
        model.train()
        steps_per_epoch = math.ceil(len(windows) / batch_size)
        total = epochs * steps_per_epoch
        warmup = max(1, total // 10)
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup)))
        )
        gen = torch.Generator().manual_seed(seed)
        pad_id, mask_id = tokenizer.pad_token_id, tokenizer.mask_token_id
        epoch_losses = []
        bar = bar_factory(total=total, desc="training masked LM")
        try:
            for _ in range(epochs):
                order = torch.randperm(len(windows), generator=gen).tolist()
                losses = []
                for b in range(0, len(order), batch_size):
                    rows = [windows[j] for j in order[b : b + batch_size]]
                    width = max(map(len, rows))
                    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
                    att = torch.zeros((len(rows), width), dtype=torch.long)
                    for r, w in enumerate(rows):
                        ids[r, : len(w)] = torch.tensor(w)
                        att[r, : len(w)] = 1
                    inputs, labels = _mask_batch(
                        ids, att, mask_id=mask_id, n_special=len(SPECIAL_TOKENS), vocab=vocab, generator=gen
                    )
                    # the MLM head only at the ~15% target positions: same loss as
                    # model(labels=...), ~1.7x faster on CPU than logits for every position
                    hidden_states = model.bert(input_ids=inputs, attention_mask=att).last_hidden_state
                    target = labels != -100
                    loss = torch.nn.functional.cross_entropy(model.cls(hidden_states[target]), labels[target])
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    opt.step()
                    sched.step()
                    losses.append(loss.item())
                    bar.update(1)
                    if hasattr(bar, "set_postfix"):
                        bar.set_postfix(loss=f"{losses[-1]:.3f}")
                epoch_losses.append(float(np.mean(losses)))
        finally:
            bar.close()
    model.eval()

    info = {
        "kind": "BERT-style masked LM trained by mimirlib.neighbors.train_masked_lm",
        "n_texts": len(texts),
        "n_windows": len(windows),
        "n_tokens": int(sum(len(w) for w in windows)),
        "vocab_size": vocab,
        "requested_vocab_size": vocab_size,
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "max_len": max_len,
        "epochs": epochs,
        "batch_size": batch_size,
        "lr": lr,
        "seed": seed,
        "steps": total,
        "epoch_mean_loss": epoch_losses,
        "train_seconds": round(time.perf_counter() - started, 2),
    }
    with staged_dir(out_dir) as tmp:
        model.save_pretrained(tmp)  # safetensors is the only format transformers 5 writes
        tokenizer.save_pretrained(tmp)
        (tmp / _TRAINING_INFO).write_text(json.dumps(info, indent=2) + "\n")
        if not (tmp / "model.safetensors").is_file():
            raise RuntimeError(f"save_pretrained wrote no model.safetensors in {tmp}")
    return out_dir


# --------------------------------------------------------------------------- loading


def load_masked_lm(name_or_path, revision: str | None = None, device="cpu"):
    """(model, tokenizer) for a masked LM: a local folder or a hub name, in eval mode.

    Same `from_pretrained` code for both (`trust_remote_code=False`). A fast tokenizer is
    required: neighbours are spliced in at its character offsets. Errors name the model:
    a missing folder raises FileNotFoundError; a hub name that cannot be fetched (no
    network, HF_HUB_OFFLINE) raises OSError suggesting a local folder.
    """
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    name = os.fspath(name_or_path)
    local = Path(name).expanduser()
    is_local = is_local_path(name_or_path)
    if is_local and not local.exists():
        raise FileNotFoundError(f"masked LM folder {name!r} does not exist")
    if is_local and not local.is_dir():
        raise NotADirectoryError(
            f"masked LM path {name!r} is a file; expected a folder written by save_pretrained"
        )
    source = str(local) if is_local else name
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, revision=revision, trust_remote_code=False)
        model = AutoModelForMaskedLM.from_pretrained(source, revision=revision, trust_remote_code=False)
    except Exception as exc:
        if is_local:
            msg = f"could not load a masked LM from the folder {name!r}: {exc}"
        else:
            msg = (
                f"could not load the masked LM {name!r} (revision {revision!r}) from the Hugging Face hub: "
                f"{exc}\nWithout network access (or with HF_HUB_OFFLINE=1 and no cached copy) a hub name "
                "cannot be resolved: pass a local folder instead, e.g. one written by save_pretrained or "
                "by mimirlib.neighbors.train_masked_lm."
            )
        raise OSError(msg) from exc
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError(f"masked LM {name!r}: its tokenizer is not a fast tokenizer; offsets are needed")
    if tokenizer.mask_token_id is None:
        raise ValueError(f"masked LM {name!r}: its tokenizer has no mask token")
    model.to(device)
    model.eval()
    return model, tokenizer


# --------------------------------------------------------------------------- neighbours


def _is_punctuation(ch: str) -> bool:
    """BERT's definition: ASCII non-alphanumeric symbols, or Unicode category P*."""
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _token_class(core: str, continuation: bool, wordpiece: bool) -> int:
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
        punct = [_is_punctuation(ch) for ch in core]
        if continuation:
            return 3 if any(punct) else 1
        if len(core) == 1 and punct[0]:
            return 2
        return 3 if any(punct) else 0
    first = core[0]
    kind = 0 if first.isalpha() else 1 if first.isdigit() else 2
    return kind + (0 if continuation else 3)


@dataclass
class _Vocab:
    """Per-id text to splice in (`core`), swap class, and which ids may be sampled per class."""

    core: list[str]
    klass: np.ndarray  # swap class of each id, see _token_class
    allowed: torch.Tensor  # [n_classes, V] bool: samplable ids for each class


def _vocab_info(tokenizer, n_logits: int) -> _Vocab:
    n_tok = min(len(tokenizer), n_logits)
    tokens = tokenizer.convert_ids_to_tokens(list(range(n_tok)))
    backend_model = tokenizer.backend_tokenizer.model
    prefix = getattr(backend_model, "continuing_subword_prefix", None)
    if type(backend_model).__name__ == "WordPiece" and prefix:
        cont = [t.startswith(prefix) for t in tokens]
        core = [t[len(prefix):] if c else t for t, c in zip(tokens, cont)]
        klass = [_token_class(c, k, True) for c, k in zip(core, cont)]
        n_classes = 4
    else:
        decoded = tokenizer.backend_tokenizer.decode_batch([[i] for i in range(n_tok)], skip_special_tokens=False)
        spaced = [t.startswith(("\u0120", "\u2581")) or d[:1].isspace() for t, d in zip(tokens, decoded)]
        core = [d.lstrip() for d in decoded]
        klass = [_token_class(c, not sp, False) for c, sp in zip(core, spaced)]
        n_classes = 6
    klass = np.array(klass, dtype=np.int64)
    special = set(tokenizer.all_special_ids)
    special_strings = [s for s in tokenizer.all_special_tokens if s]
    ok = np.array(
        [
            i not in special
            and bool(c)
            and not _WHITESPACE.search(c)
            and "\ufffd" not in c
            and not any(s in c for s in special_strings)
            for i, c in enumerate(core)
        ],
        dtype=bool,
    )
    allowed = torch.zeros((n_classes, n_logits), dtype=torch.bool)
    for k in range(n_classes):
        allowed[k, :n_tok] = torch.from_numpy(ok & (klass == k))
    return _Vocab(core=core, klass=klass, allowed=allowed)


def _text_rng(text: str, seed: int) -> np.random.Generator:
    """A text's neighbours depend on (text, seed) only, not on list position or batching."""
    digest = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng([seed & 0xFFFFFFFFFFFFFFFF, digest])


def _masked_logits(model, input_ids, attention_mask, rows, cols):
    """MLM logits at the masked positions only: a [B, L, V] tensor of logits would not fit."""
    base = getattr(model, getattr(model, "base_model_prefix", ""), None)
    head = getattr(model, "cls", None)
    if head is None:
        head = getattr(model, "lm_head", None)
    if base is not None and head is not None:
        hidden = base(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return head(hidden[rows, cols])
    return model(input_ids=input_ids, attention_mask=attention_mask).logits[rows, cols]


def _window_limit(model, tokenizer, max_length: int) -> int:
    limit = max_length
    tml = getattr(tokenizer, "model_max_length", None)
    if isinstance(tml, int) and 0 < tml < 10**8:
        limit = min(limit, tml)
    mpe = getattr(model.config, "max_position_embeddings", None)
    if isinstance(mpe, int) and mpe > 0:
        if "roberta" in getattr(model.config, "model_type", ""):
            mpe -= (model.config.pad_token_id or 0) + 1  # RoBERTa positions start after the pad id
        limit = min(limit, mpe)
    return limit


def _sample(logits: torch.Tensor, allowed: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF sampling with pre-drawn uniforms, so results do not depend on batching."""
    probs = torch.softmax(logits.float(), dim=-1).double() * allowed
    cum = torch.cumsum(probs, dim=-1)
    total = cum[:, -1]
    bad = ~(total > 0)
    if bad.any():  # every allowed probability underflowed: fall back to uniform over allowed
        cum[bad] = torch.cumsum(allowed[bad].double(), dim=-1)
        total = cum[:, -1]
    target = (uniforms.double() * total).unsqueeze(1)
    idx = torch.searchsorted(cum, target, right=True).squeeze(1)
    return idx.clamp_(max=logits.shape[-1] - 1)


def generate_neighbors(
    texts: Sequence[str],
    model,
    tokenizer,
    *,
    n_neighbors: int = 25,
    mask_fraction: float = 0.05,
    seed: int = 0,
    batch_size: int = 32,
    max_length: int = 512,
    progress=None,
) -> list[list[str]]:
    """`n_neighbors` neighbours of each text: k = round(mask_fraction * n) of its n real tokens
    (at least 1) swapped in place for MLM samples (the variant is described in the module doc).

    Only the first `max_length` tokens (including [CLS]/[SEP]; also capped by the model's
    positions) are seen by the MLM and perturbed, and n counts those; the rest of a longer
    text is kept unchanged (a warning says how many texts were cut). Positions that cannot
    be swapped cleanly ([UNK], tokens holding whitespace or sharing a character span) are
    never chosen; whitespace is always kept as in the original. Deterministic under `seed`:
    a text's neighbours depend on the text, seed, model and parameters, not on its position
    in `texts` or on `batch_size`. `batch_size` counts neighbour rows per forward pass.
    Empty or blank texts, and texts with no swappable token, raise ValueError naming the index.
    """
    texts = _as_text_list(texts)
    if not isinstance(n_neighbors, int) or n_neighbors < 1:
        raise ValueError(f"n_neighbors must be an integer >= 1, got {n_neighbors!r}")
    if not 0 < mask_fraction <= 1:
        raise ValueError(f"mask_fraction must be in (0, 1], got {mask_fraction!r}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    if not isinstance(max_length, int) or max_length < 3:
        raise ValueError(f"max_length must be an integer >= 3, got {max_length!r}")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] is {type(t).__name__}, not str")
        if not t.strip():
            raise ValueError(f"texts[{i}] is empty or blank: it has no token to replace")
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError("generate_neighbors needs a fast tokenizer (character offsets)")
    mask_id = tokenizer.mask_token_id
    if mask_id is None:
        raise ValueError("the tokenizer has no mask token")
    if not texts:
        return []

    n_logits = model.get_output_embeddings().weight.shape[0]
    vocab = _vocab_info(tokenizer, n_logits)
    window = _window_limit(model, tokenizer, max_length)
    enc = tokenizer(
        texts,
        truncation=True,
        max_length=window,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
    )
    mapping = enc["overflow_to_sample_mapping"]
    first_row: dict[int, int] = {}
    n_rows_per_text = np.bincount(np.asarray(mapping, dtype=np.int64), minlength=len(texts))
    for r, i in enumerate(mapping):
        first_row.setdefault(int(i), r)
    n_cut = int((n_rows_per_text > 1).sum())
    if n_cut:
        warnings.warn(
            f"{n_cut} of {len(texts)} texts are longer than the masked LM's window of {window} tokens: "
            "only their first part is perturbed, the rest is kept unchanged",
            stacklevel=2,
        )

    special_ids = set(tokenizer.all_special_ids)
    class_has_candidates = vocab.allowed.any(dim=1).tolist()  # per swap class
    plans = []  # per text: (ids, spans, core span starts)
    rows = []  # (text index, neighbour index, positions, uniforms)
    for i, text in enumerate(texts):
        r = first_row[i]
        ids = enc["input_ids"][r]
        offsets = enc["offset_mapping"][r]
        smask = enc["special_tokens_mask"][r]
        real = [p for p in range(len(ids)) if not smask[p] and ids[p] not in special_ids]
        n_real = sum(1 for p in range(len(ids)) if not smask[p])
        starts = {}
        eligible = []
        for p in real:
            s, e = offsets[p]
            span = text[s:e]
            stripped = span.lstrip()
            s2 = s + len(span) - len(stripped)
            if s2 >= e or _WHITESPACE.search(stripped) or ids[p] >= len(vocab.core):
                continue
            overlaps = any(
                0 <= q < len(ids) and q != p and not smask[q]
                and offsets[q][0] < e and s < offsets[q][1]
                for q in (p - 1, p + 1)
            )
            if overlaps or not class_has_candidates[vocab.klass[ids[p]]]:
                continue
            starts[p] = s2
            eligible.append(p)
        if not eligible:
            raise ValueError(f"texts[{i}] has no token the masked LM can replace (only special or [UNK] tokens)")
        k = min(len(eligible), max(1, int(math.floor(mask_fraction * n_real + 0.5))))
        rng = _text_rng(text, seed)
        plans.append((ids, offsets, starts))
        for j in range(n_neighbors):
            pos = np.sort(rng.choice(np.asarray(eligible), size=k, replace=False))
            rows.append((i, j, pos, rng.random(k)))

    # longest rows first, so each forward pass pads little; outputs do not depend on this order
    order = sorted(range(len(rows)), key=lambda r: -len(plans[rows[r][0]][0]))
    fills: dict[int, np.ndarray] = {}
    device = next(model.parameters()).device
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    was_training = model.training
    model.eval()
    bar = _progress_factory(progress)(total=math.ceil(len(rows) / batch_size), desc="neighbours")
    try:
        with torch.inference_mode():
            for b in range(0, len(order), batch_size):
                chunk = order[b : b + batch_size]
                width = max(len(plans[rows[r][0]][0]) for r in chunk)
                ids_t = torch.full((len(chunk), width), pad_id, dtype=torch.long)
                att = torch.zeros((len(chunk), width), dtype=torch.long)
                rr, cc, orig, us = [], [], [], []
                for slot, r in enumerate(chunk):
                    i, _, pos, u = rows[r]
                    ids = plans[i][0]
                    ids_t[slot, : len(ids)] = torch.tensor(ids)
                    att[slot, : len(ids)] = 1
                    ids_t[slot, torch.from_numpy(pos)] = mask_id
                    rr.extend([slot] * len(pos))
                    cc.extend(pos.tolist())
                    orig.extend(ids[p] for p in pos)
                    us.extend(u.tolist())
                rr_t, cc_t = torch.tensor(rr), torch.tensor(cc)
                logits = _masked_logits(model, ids_t.to(device), att.to(device), rr_t.to(device), cc_t.to(device))
                logits = logits.float().cpu()
                orig_t = torch.tensor(orig)
                sampled = torch.empty(len(rr), dtype=torch.long)
                step = max(1, 2**22 // logits.shape[-1])  # bound the float64 cumsum's memory
                for a in range(0, len(rr), step):
                    sl = slice(a, a + step)
                    allowed = vocab.allowed[torch.from_numpy(vocab.klass[orig_t[sl].numpy()])].clone()
                    allowed[torch.arange(allowed.shape[0]), orig_t[sl]] = False
                    sampled[sl] = _sample(logits[sl], allowed, torch.tensor(us[sl]))
                at = 0
                for r in chunk:
                    n = len(rows[r][2])
                    fills[r] = sampled[at : at + n].numpy()
                    at += n
                bar.update(1)
    finally:
        bar.close()
        if was_training:
            model.train()

    out: list[list[str]] = [[] for _ in texts]
    for r, (i, _, pos, _) in enumerate(rows):
        text = texts[i]
        _, offsets, starts = plans[i]
        pieces, cursor = [], 0
        for p, new_id in zip(pos.tolist(), fills[r].tolist()):
            pieces.append(text[cursor : starts[p]])
            pieces.append(vocab.core[new_id])
            cursor = offsets[p][1]
        pieces.append(text[cursor:])
        out[i].append("".join(pieces))
    return out
