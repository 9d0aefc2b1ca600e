"""Masked-LM training, loading and in-place neighbour generation (tiny models: seconds)."""

import json
import random
import re
import warnings

import pytest
import torch

from mimirlib.samplers.neighbors import SPECIAL_TOKENS, generate_neighbors, load_masked_lm, train_masked_lm

SUBJECTS = ["The licensee", "A user", "The author", "Each contributor", "The program", "Our parser"]
VERBS = ["copies", "modifies", "distributes", "returns", "reads", "writes", "parses"]
OBJECTS = ["the software", "a copy", "the notice", "this file", "the buffer", "every token", "the value"]
TAILS = [
    "without warranty.",
    "under these terms.",
    "at no charge.",
    "in source form.",
    "as is.",
    "with the notice;",
    "for any purpose.",
]
TINY = dict(vocab_size=300, hidden=32, layers=2, heads=2, max_len=128, epochs=2, batch_size=32, lr=5e-3)


def sentence(rng):
    return " ".join([rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(TAILS)])


def corpus(n=200, seed=0):
    rng = random.Random(seed)
    return [sentence(rng) for _ in range(n)]


def long_text(n_sentences, seed):
    rng = random.Random(seed)
    lines = [sentence(rng) for _ in range(n_sentences)]
    # newlines, indentation and double spaces must survive the swaps untouched
    return lines[0] + "\n    " + "  ".join(lines[1:3]) + "\n\n" + " ".join(lines[3:])


def skeleton(text):
    return re.findall(r"\s+", text)


def chunks(text):
    return text.split()


def words(tok, text):
    """The tokenizer's pre-tokens: words and single punctuation marks."""
    return tok.backend_tokenizer.pre_tokenizer.pre_tokenize_str(text)


@pytest.fixture(scope="module")
def mlm_dir(tmp_path_factory):
    return train_masked_lm(corpus(), tmp_path_factory.mktemp("mlm") / "tiny", seed=0, progress=False, **TINY)


@pytest.fixture(scope="module")
def mlm(mlm_dir):
    return load_masked_lm(mlm_dir)


def test_save_load_round_trip(mlm_dir, mlm):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    model, tok = mlm
    names = {p.name for p in mlm_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= names
    assert not [p for p in mlm_dir.parent.iterdir() if p.name.startswith(".")], "temp dir left behind"
    assert type(model).__name__ == "BertForMaskedLM" and not model.training
    assert tok.is_fast and [tok.convert_ids_to_tokens(i) for i in range(5)] == list(SPECIAL_TOKENS)
    assert tok.pad_token == "[PAD]" and tok.mask_token == "[MASK]" and tok.unk_token == "[UNK]"
    info = json.loads((mlm_dir / "mlm_training.json").read_text())
    assert info["hidden"] == 32 and info["n_texts"] == 200 and len(info["epoch_mean_loss"]) == 2
    assert info["epoch_mean_loss"][-1] < info["epoch_mean_loss"][0]  # it learned something
    # the plain transformers path sees exactly the same model and tokenizer
    m2 = AutoModelForMaskedLM.from_pretrained(mlm_dir).eval()
    t2 = AutoTokenizer.from_pretrained(mlm_dir)
    text = "The Licensee copies the Software, as is."
    enc = tok(text, return_tensors="pt")
    assert enc.input_ids.tolist() == t2(text, return_tensors="pt").input_ids.tolist()
    assert tok.tokenize(text)[0] == "The"  # cased: capitals survive
    with torch.no_grad():
        assert torch.equal(model(**enc).logits, m2(**enc).logits)


def test_training_is_deterministic_and_replaces_atomically(mlm_dir, tmp_path):
    from safetensors.torch import load_file

    again = tmp_path / "again"
    again.mkdir()
    (again / "stale.txt").write_text("from an older run")
    assert train_masked_lm(corpus(), again, seed=0, progress=False, **TINY) == again
    assert not (again / "stale.txt").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["again"]
    assert (again / "tokenizer.json").read_text() == (mlm_dir / "tokenizer.json").read_text()
    a, b = load_file(mlm_dir / "model.safetensors"), load_file(again / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_training_rejects_bad_input(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError, match="file"):
        train_masked_lm(corpus(20), tmp_path / "file", progress=False, **TINY)
    with pytest.raises(ValueError, match="divisible"):
        train_masked_lm(corpus(20), tmp_path / "m", progress=False, **{**TINY, "heads": 3})
    with pytest.raises(ValueError, match="non-blank"):
        train_masked_lm(["", "  "], tmp_path / "m", progress=False, **TINY)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_neighbours_swap_about_five_percent(mlm):
    model, tok = mlm
    texts = [long_text(8, seed) for seed in range(3)]
    out = generate_neighbors(texts, model, tok, n_neighbors=25, mask_fraction=0.05, seed=1)
    assert len(out) == 3 and all(len(nb) == 25 for nb in out)
    for text, nbs in zip(texts, out):
        n_real = len(tok(text).input_ids) - 2
        k = max(1, int(0.05 * n_real + 0.5))  # round half up
        assert 3 <= k <= 8
        orig_tokens = tok.tokenize(text)
        diffs = []
        for nb in nbs:
            assert nb != text
            assert skeleton(nb) == skeleton(text)  # whitespace kept byte for byte
            changed = sum(a != b for a, b in zip(chunks(nb), chunks(text)))
            assert 1 <= changed <= k  # each swap lies inside one whitespace-free chunk
            assert not any(s in nb for s in SPECIAL_TOKENS) and "##" not in nb
            assert len(words(tok, nb)) == len(words(tok, text))  # punctuation never glued to a word
            new_tokens = tok.tokenize(nb)
            # re-tokenising may split a changed word differently: tolerate, within bounds
            assert abs(len(new_tokens) - len(orig_tokens)) <= k
            diffs.append(
                sum(a != b for a, b in zip(new_tokens, orig_tokens)) if len(new_tokens) == len(orig_tokens) else None
            )
        exact = [d for d in diffs if d is not None]
        assert len(exact) >= 15  # most neighbours keep the token grid
        assert all(1 <= d <= k for d in exact)
        assert sum(exact) / len(exact) >= 0.7 * k


def test_neighbours_deterministic_and_seeded(mlm):
    model, tok = mlm
    texts = corpus(6, seed=3)
    a = generate_neighbors(texts, model, tok, n_neighbors=5, seed=7)
    assert a == generate_neighbors(texts, model, tok, n_neighbors=5, seed=7)
    assert a != generate_neighbors(texts, model, tok, n_neighbors=5, seed=8)
    # neither batching nor a text's position in the list changes its neighbours
    assert a == generate_neighbors(texts, model, tok, n_neighbors=5, seed=7, batch_size=1)
    assert a[::-1] == generate_neighbors(texts[::-1], model, tok, n_neighbors=5, seed=7, batch_size=7)


def test_n_neighbors_and_short_texts(mlm):
    model, tok = mlm
    texts = ["The user reads.", "Each"]
    out = generate_neighbors(texts, model, tok, n_neighbors=3)
    assert [len(x) for x in out] == [3, 3]
    for text, nbs in zip(texts, out):
        assert all(nb != text and skeleton(nb) == skeleton(text) for nb in nbs)
    assert generate_neighbors([], model, tok) == []


def test_invalid_texts_raise(mlm):
    model, tok = mlm
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        generate_neighbors(["A user reads.", ""], model, tok)
    with pytest.raises(ValueError, match=r"texts\[0\]"):
        generate_neighbors(["  \n "], model, tok)
    with pytest.raises(ValueError, match=r"texts\[0\].*no token"):
        generate_neighbors(["\u2603\u2603"], model, tok)  # a single [UNK]
    with pytest.raises(TypeError):
        generate_neighbors("A user reads.", model, tok)
    with pytest.raises(ValueError, match="n_neighbors"):
        generate_neighbors(["A user reads."], model, tok, n_neighbors=0)


def test_long_text_perturbed_only_in_window(mlm):
    model, tok = mlm
    text = long_text(12, seed=5)
    enc = tok(text, truncation=True, max_length=16, return_offsets_mapping=True)
    cut = enc.offset_mapping[-2][1]  # end of the last real token in the window
    with pytest.warns(UserWarning, match="1 of 1 texts"):
        (nbs,) = generate_neighbors([text], model, tok, n_neighbors=10, max_length=16, seed=2)
    for nb in nbs:
        assert nb != text and nb.endswith(text[cut:]) and skeleton(nb) == skeleton(text)
        assert sum(a != b for a, b in zip(chunks(nb), chunks(text))) == 1  # 5% of 14 tokens -> 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        generate_neighbors(["A user reads."], model, tok, n_neighbors=2, max_length=16)


def test_uncased_bert_tokenizer_path(mlm):
    """bert-base-uncased's tokenizer (lowercasing, accent stripping): offsets still splice cleanly."""
    from transformers import BertTokenizer

    model, tok = mlm
    uncased = BertTokenizer(vocab=tok.get_vocab(), do_lower_case=True)
    text = "THE AUTHOR Copies  the Notice,\nas is. Café résumé."
    (nbs,) = generate_neighbors([text], model, uncased, n_neighbors=8, mask_fraction=0.2, seed=0)
    for nb in nbs:
        assert nb != text and skeleton(nb) == skeleton(text)
        assert len(words(uncased, nb)) == len(words(uncased, text))
        assert not any(s in nb for s in SPECIAL_TOKENS) and "##" not in nb


def test_byte_level_tokenizer_path():
    """A RoBERTa-style byte-level BPE masker: no whitespace moved, no broken UTF-8."""
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForMaskedLM

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        corpus(100) + ["na\u00efve caf\u00e9 \u2603"], vocab_size=400, special_tokens=specials, show_progress=False
    )
    bpe.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        cls_token="<s>",
        sep_token="</s>",
        model_max_length=128,
    )
    torch.manual_seed(0)
    model = RobertaForMaskedLM(
        RobertaConfig(
            vocab_size=len(tok),
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            pad_token_id=1,
            max_position_embeddings=130,
        )
    ).eval()
    text = "The author copies  the notice,\n    as is. na\u00efve caf\u00e9 \u2603 ok"
    (nbs,) = generate_neighbors([text], model, tok, n_neighbors=10, mask_fraction=0.2, seed=0)
    for nb in nbs:
        assert nb != text and skeleton(nb) == skeleton(text) and "\ufffd" not in nb
        assert len(words(tok, nb)) == len(words(tok, text))
        assert not any(s in nb for s in specials)


def test_load_missing_path_names_it(tmp_path):
    missing = tmp_path / "no-such-mlm"
    with pytest.raises(FileNotFoundError, match="no-such-mlm"):
        load_masked_lm(missing)
    with pytest.raises(FileNotFoundError, match="no-such-mlm"):
        load_masked_lm(str(missing))
    with pytest.raises(FileNotFoundError, match="also-missing"):
        load_masked_lm("./also-missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(OSError, match="empty"):
        load_masked_lm(tmp_path / "empty")


def test_load_hub_name_offline_suggests_local_path(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(OSError, match=r"mimir-book-test/no-such-mlm(.|\n)*local folder"):
        load_masked_lm("mimir-book-test/no-such-mlm")


# --------------------------------------------------------------------------- whole-word neighbours


def word_diffs(a, b):
    """Indices of the whitespace words that differ (same word count required)."""
    wa, wb = a.split(), b.split()
    assert len(wa) == len(wb)
    return [i for i, (x, y) in enumerate(zip(wa, wb)) if x != y]


def test_word_neighbours_replace_k_whole_words(mlm):
    from mimirlib.samplers.mlm.words import word_cores

    model, tok = mlm
    texts = [long_text(4, seed=s) for s in range(3)]
    out = generate_neighbors(texts, model, tok, n_neighbors=6, mask_fraction=0.1, seed=1, unit="word", top_k=5)
    for text, nbs in zip(texts, out):
        n_words = len(word_cores(text, len(text)))
        k = max(1, round(0.1 * n_words))
        assert len(nbs) == 6 and len(set(nbs)) == 6  # distinct
        for nb in nbs:
            assert skeleton(nb) == skeleton(text)  # whitespace byte-identical
            changed = word_diffs(text, nb)
            assert len(changed) == k
            # only whole words change: every other character is the original's
            for i, (a, b) in enumerate(zip(text.split(), nb.split())):
                if i not in changed:
                    assert a == b
                else:
                    core = re.sub(r"^\W+|\W+$", "", b)
                    assert core and core.lower() != re.sub(r"^\W+|\W+$", "", a).lower()
                    assert "##" not in b


def test_word_neighbours_deterministic_and_seeded(mlm):
    model, tok = mlm
    texts = corpus(6, seed=3)
    kw = dict(n_neighbors=3, mask_fraction=0.25, unit="word", top_k=5)
    a = generate_neighbors(texts, model, tok, seed=7, **kw)
    assert a == generate_neighbors(texts, model, tok, seed=7, **kw)
    assert a != generate_neighbors(texts, model, tok, seed=8, **kw)
    assert a == generate_neighbors(texts, model, tok, seed=7, batch_size=1, **kw)
    assert a[::-1] == generate_neighbors(texts[::-1], model, tok, seed=7, batch_size=5, **kw)
    # one word at least, however small the fraction
    for text, nbs in zip(texts, generate_neighbors(texts, model, tok, seed=7, n_neighbors=2, unit="word")):
        assert all(len(word_diffs(text, nb)) == 1 for nb in nbs)


def test_token_unit_is_the_default_and_unchanged(mlm):
    model, tok = mlm
    texts = corpus(4, seed=9)
    assert generate_neighbors(texts, model, tok, n_neighbors=3, seed=2) == generate_neighbors(
        texts, model, tok, n_neighbors=3, seed=2, unit="token", top_k=None
    )


def test_unit_and_top_k_are_checked(mlm):
    model, tok = mlm
    for bad in ("words", "Word", None):
        with pytest.raises(ValueError, match=f"unit must be one of .*{re.escape(repr(bad))}"):
            generate_neighbors(["A user reads."], model, tok, unit=bad)
    for bad in (0, -1, 2.5, True, "5"):
        with pytest.raises(ValueError, match="top_k"):
            generate_neighbors(["A user reads."], model, tok, unit="word", top_k=bad)
    with pytest.raises(ValueError, match="top_k applies to unit='word'"):
        generate_neighbors(["A user reads."], model, tok, top_k=5)


def test_word_neighbours_of_texts_without_enough_variants_raise(mlm):
    model, tok = mlm
    with pytest.raises(ValueError, match=r"texts\[1\]: only \d+ distinct"):
        generate_neighbors(["A user reads the notice.", "Each"], model, tok, n_neighbors=4, unit="word", top_k=1)
    with pytest.raises(ValueError, match=r"texts\[0\] has no word"):
        generate_neighbors(["- ... ;"], model, tok, unit="word")


def test_long_text_word_neighbours_only_in_window(mlm):
    model, tok = mlm
    text = long_text(12, seed=5)
    enc = tok(text, truncation=True, max_length=16, return_offsets_mapping=True)
    cut = enc.offset_mapping[-2][1]
    with pytest.warns(UserWarning, match="1 of 1 texts"):
        (nbs,) = generate_neighbors([text], model, tok, n_neighbors=4, max_length=16, seed=2, unit="word", top_k=5)
    for nb in nbs:
        assert nb.endswith(text[cut:]) and len(word_diffs(text, nb)) == 1


def test_word_neighbours_of_a_text_that_holds_the_mask_tokens_own_string(mlm):
    """A docstring may hold "[MASK]" itself (the lab's docs domain does): only the inserted masks are filled,
    the literal one is a word like the others (it made the lab build fail: 'expected 12 mask tokens, found 13')."""
    from mimirlib.samplers.mlm.words import word_cores

    model, tok = mlm
    text = long_text(4, seed=5)
    words = text.split(" ")
    words[3] = tok.mask_token
    text = " ".join(words)
    out = generate_neighbors([text], model, tok, n_neighbors=4, mask_fraction=0.25, seed=0, unit="word", top_k=5)
    k = max(1, round(0.25 * len(word_cores(text, len(text)))))
    assert len(out[0]) == 4 and all(len(word_diffs(text, nb)) == k for nb in out[0])
