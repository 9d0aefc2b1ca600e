"""The lab's neighbour settings: the ``neighbors`` key, its defaults and checks, and when the lab's
benchmarks get new neighbours (a tiny masked LM: seconds)."""

import json
import random

import pytest

from mimirlib.core.data import read_records, write_records
from mimirlib.lab.layout import MAIN_SPLIT, NEIGHBOUR_DEFAULTS, Lab, config_key, neighbour_settings
from mimirlib.lab.stages import add_neighbors
from mimirlib.profiles import load_profile
from mimirlib.samplers.neighbors import generate_neighbors, load_masked_lm

WORDS = "the a licensee user copies reads software notice file buffer value under terms without warranty".split()
MLM = dict(vocab_size=200, hidden=16, layers=1, heads=2, max_len=64, epochs=1, batch_size=16, lr=5e-3)


def sentences(n, seed):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(12)) + "." for _ in range(n)]


def test_a_missing_neighbors_key_means_the_old_neighbours():
    assert neighbour_settings({}) == {"unit": "token", "fraction": 0.05, "top_k": None} == NEIGHBOUR_DEFAULTS
    assert neighbour_settings({"neighbors": None}) == NEIGHBOUR_DEFAULTS
    assert neighbour_settings({"neighbors": {"unit": "word"}}) == {"unit": "word", "fraction": 0.05, "top_k": None}


def test_the_profiles_use_whole_words_and_keep_their_lab_folder():
    for name in ("smoke", "lab"):
        cfg = load_profile(name)["lab"]
        assert neighbour_settings(cfg) == {"unit": "word", "fraction": 0.1, "top_k": 5}
        old = {k: v for k, v in cfg.items() if k != "neighbors"}
        assert config_key(old) == config_key(cfg)  # neighbour settings never key the lab folder
    assert "lab" not in load_profile("paper")


@pytest.mark.parametrize(
    "bad, match",
    [
        ("word", "neighbors must be a mapping"),
        ({"unit": "words"}, "neighbors.unit must be one of .*'words'"),
        ({"fraction": 0}, r"neighbors.fraction must be a number in \(0, 1\], got 0"),
        ({"fraction": "0.1"}, "neighbors.fraction"),
        ({"fraction": True}, "neighbors.fraction"),
        ({"unit": "word", "top_k": 0}, "neighbors.top_k must be an integer >= 1 or null, got 0"),
        ({"unit": "word", "top_k": 2.5}, "neighbors.top_k"),
        ({"top_k": 5}, "top_k applies to unit 'word' only"),
        ({"unit": "word", "topk": 5}, r"unknown key\(s\) \['topk'\]"),
    ],
)
def test_bad_neighbour_settings_are_one_line_naming_the_key(tmp_path, bad, match):
    with pytest.raises(ValueError, match=match) as e:
        neighbour_settings({"neighbors": bad})
    assert "\n" not in str(e.value) and str(e.value).startswith("lab config: neighbors")
    with pytest.raises(ValueError, match=match):
        Lab(tmp_path, {"neighbors": bad})


@pytest.fixture
def tiny_lab(tmp_path):
    cfg = {"seed": 0, "domains": ["d"], "mlm": MLM, "n_neighbors": 2}
    lab = Lab(tmp_path, cfg)
    rows = [{"member": m, "nonmember": n} for m, n in zip(sentences(3, 1), sentences(3, 2))]
    write_records(rows, lab.benchmarks_dir / "d" / f"{MAIN_SPLIT}.jsonl")
    texts = {str(i): t for i, t in enumerate(sentences(60, 0))}
    return lab, {"d": {"train": list(texts)}}, texts


def test_neighbours_follow_the_settings_and_old_ones_stay_valid(tiny_lab):
    lab, splits, texts = tiny_lab
    bench = lab.benchmarks_dir / "d" / f"{MAIN_SPLIT}.jsonl"
    record = lab.benchmarks_dir / "neighbors.json"
    add_neighbors(lab, splits, texts)
    model, tok = load_masked_lm(lab.masked_lm_dir())
    rows = read_records(bench)
    members = [r["member"] for r in rows]
    assert [r["member_neighbors"] for r in rows] == generate_neighbors(members, model, tok, n_neighbors=2, seed=0)
    assert json.loads(record.read_text())[f"d/{MAIN_SPLIT}.jsonl"]["unit"] == "token"

    record.unlink()  # a lab built before the record: its neighbours are the defaults', kept
    before = bench.stat().st_mtime_ns
    add_neighbors(lab, splits, texts)
    assert bench.stat().st_mtime_ns == before and not record.exists()

    lab.config["neighbors"] = {"unit": "word", "fraction": 0.1, "top_k": 5}  # new settings: new neighbours
    add_neighbors(lab, splits, texts)
    rows = read_records(bench)
    want = generate_neighbors(members, model, tok, n_neighbors=2, seed=0, unit="word", mask_fraction=0.1, top_k=5)
    assert [r["member_neighbors"] for r in rows] == want
    made = json.loads(record.read_text())[f"d/{MAIN_SPLIT}.jsonl"]
    assert made == {
        "mlm": lab.masked_lm_dir().name,
        "seed": 0,
        "n_neighbors": 2,
        "unit": "word",
        "fraction": 0.1,
        "top_k": 5,
    }
    before = bench.stat().st_mtime_ns
    add_neighbors(lab, splits, texts)  # unchanged settings: nothing regenerated
    assert bench.stat().st_mtime_ns == before


def _sibling(root, pairs_seed=2):
    cfg = {"seed": 0, "domains": ["d"], "mlm": MLM, "n_neighbors": 2}
    lab = Lab(root, cfg)
    rows = [{"member": m, "nonmember": n} for m, n in zip(sentences(3, 1), sentences(3, pairs_seed))]
    write_records(rows, lab.benchmarks_dir / "d" / f"{MAIN_SPLIT}.jsonl")
    return lab


def test_a_sibling_lab_with_the_same_pairs_settings_and_masked_lm_lends_its_neighbours(tiny_lab, monkeypatch):
    lab, splits, texts = tiny_lab
    first = _sibling(lab.root / "lab-a")
    add_neighbors(first, splits, texts)
    made = read_records(first.benchmarks_dir / "d" / f"{MAIN_SPLIT}.jsonl")

    import mimirlib.samplers.neighbors as nb

    def refuse(*a, **k):
        raise AssertionError("generated although a sibling lab has them")

    monkeypatch.setattr(nb, "generate_neighbors", refuse)
    second = _sibling(lab.root / "lab-b")  # another lab folder (another knob), the same texts and masked LM
    add_neighbors(second, splits, texts)
    assert read_records(second.benchmarks_dir / "d" / f"{MAIN_SPLIT}.jsonl") == made
    assert json.loads((second.benchmarks_dir / "neighbors.json").read_text()) == json.loads(
        (first.benchmarks_dir / "neighbors.json").read_text()
    )

    other_pairs = _sibling(lab.root / "lab-c", pairs_seed=3)  # other non-members: its own neighbours
    with pytest.raises(AssertionError, match="generated although"):
        add_neighbors(other_pairs, splits, texts)
    other_settings = _sibling(lab.root / "lab-d")
    other_settings.config["n_neighbors"] = 3
    with pytest.raises(AssertionError, match="generated although"):
        add_neighbors(other_settings, splits, texts)
    other_mlm = _sibling(lab.root / "lab-e")  # a masked LM trained on other texts: another fingerprint
    with pytest.raises(AssertionError, match="generated although"):
        add_neighbors(other_mlm, splits, {k: v + " extra" for k, v in texts.items()})
