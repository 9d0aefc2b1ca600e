"""The lab's tokenizer: byte-level BPE trained on the training pool, as Pythia's was on the Pile.

Saved as a transformers ``PreTrainedTokenizerFast`` so lab models and hub models share one
loading path. ``<|endoftext|>`` separates packed documents; ``<|padding|>`` pads batches
(as in Pythia's vocabulary), and padding is never scored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from mimirlib.fsutil import staged_dir

EOS = "<|endoftext|>"
PAD = "<|padding|>"


def train_tokenizer(texts: Iterable[str], out_dir: str | Path, vocab_size: int = 8000) -> Path:
    """Train and save (atomically) a byte-level BPE tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    out_dir = Path(out_dir)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS, PAD],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=EOS, bos_token=EOS, unk_token=EOS, pad_token=PAD, model_max_length=2048
    )
    with staged_dir(out_dir) as tmp:
        fast.save_pretrained(tmp)
    return out_dir
