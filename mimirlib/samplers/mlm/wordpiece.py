"""The lab masked LM's WordPiece vocabulary, learnt deterministically (see `learn_wordpiece_vocab`)."""

from __future__ import annotations

from typing import Sequence

__all__ = ["SPECIAL_TOKENS", "learn_wordpiece_vocab", "train_wordpiece"]

#: Special tokens of the lab tokenizer, in id order (BERT's names).
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def learn_wordpiece_vocab(
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
        new = sym(symbols[a] + symbols[b][len(prefix) :])
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


def train_wordpiece(texts: Sequence[str], vocab_size: int, max_len: int):
    """A cased BERT-style WordPiece tokenizer (:mod:`mimirlib.samplers.mlm.train` says why WordPiece)."""
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
    vocab = learn_wordpiece_vocab(counts, vocab_size)
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
