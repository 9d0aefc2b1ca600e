"""Shared fixtures: a tiny GPT-NeoX saved with save_pretrained, read back like a hub model."""

import random

import pytest

WORDS = (
    "the model reads every token of the text and predicts the next one from what came before "
    "membership inference asks whether a sample was part of the training data"
).split()


def synthetic_texts(n: int, seed: int = 0, words: int = 40) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(n)]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A randomly initialised 2-layer GPT-NeoX and its byte-level BPE tokenizer, on disk."""
    import torch
    from transformers import GPTNeoXForCausalLM

    from mimirlib.lab.tokenizer import train_tokenizer
    from mimirlib.lab.train import ModelSize, neox_config

    root = tmp_path_factory.mktemp("tiny")
    tok_dir = train_tokenizer(synthetic_texts(200), root / "tok", vocab_size=300)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    torch.manual_seed(0)
    model = GPTNeoXForCausalLM(neox_config(ModelSize("t", 16, 2, 2), len(tok), 64, tok.eos_token_id))
    out = root / "model"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def smoke_lab():
    """The smoke profile's lab (built on first use, under ``MIMIR_CACHE`` or ``.cache``)."""
    from mimirlib.lab.build import ensure_lab

    return ensure_lab("smoke")
