"""One way to read a profile: the lab builder (`profiles.load_profile`) and the runner
(`runner.resolve_params`) parse the same file with the same YAML rule."""

from pathlib import Path

import pytest

from mimirlib import runner
from mimirlib.profiles import PROFILES, load_profile, load_yaml
from mimirlib.runner import resolve_params

FIXTURES = Path(__file__).parent / "fixtures" / "notebooks"


@pytest.mark.parametrize(
    "text,value",
    [
        ("1e-3", 0.001),
        ("5E+4", 50000.0),
        ("-2.5e-2", -0.025),
        ("1.0e-3", 0.001),
        ("0.25", 0.25),
        ("3", 3),
        ("'1e-3'", "1e-3"),
        ("1e-3x", "1e-3x"),
    ],
)
def test_scientific_notation_is_a_float_quoted_text_stays_text(text, value):
    got = load_yaml(f"x: {text}")["x"]
    assert got == value and type(got) is type(value)


def test_same_file_gives_the_same_values_to_the_builder_and_the_runner(tmp_path):
    (tmp_path / "lab.yml").write_text(
        "lab:\n  lr: 1e-3\n  steps: 10\n"
        "notebooks:\n  ok:\n    n: 4\n    rate: 1e-3\n    extra: 5E+4\n    domains: [code, web]\n"
    )
    profile = load_profile("lab", tmp_path)
    params = resolve_params("ok", "lab", notebooks_dir=FIXTURES, profiles_dir=tmp_path)
    assert params == {**profile["notebooks"]["ok"], "profile": "lab"}
    assert params["rate"] == 0.001 and params["extra"] == 50000.0
    assert profile["lab"]["lr"] == 0.001


@pytest.mark.parametrize("name", PROFILES)
def test_packaged_profile_reads_the_same_by_name_and_from_the_runners_folder(name):
    assert load_profile(name) == load_profile(name, runner.PROFILES_DIR)


@pytest.mark.parametrize("name", ["lab", "smoke"])
def test_the_main_results_comparisons_have_seeds_to_average(name):
    # size (largest vs smallest), best attack (on the largest) and dedup (the natural twin's size) are
    # decided on seed-averaged effects: each compared size must have seed replicates in the profile
    lab = load_profile(name)["lab"]
    sizes = [t["name"] for t in lab["targets"]]
    reps = lab["replicates"]
    assert {sizes[0], sizes[-1], lab["natural_variant"]} <= set(reps["sizes"]) and reps["natural"]
    assert len(reps["seeds"]) >= 2


@pytest.mark.parametrize("name", ["lab", "smoke"])
def test_a_new_lab_draw_redraws_the_chapter_that_needs_no_lab(name, tmp_path):
    # RaMIA beyond text trains its own models on the digits: its seed is its whole draw, so the stability check
    # (the lab profile's seed changed, every chapter re-run) must change it too, or that chapter agrees by construction
    text = (runner.PROFILES_DIR / f"{name}.yml").read_text(encoding="utf-8")
    profile = load_profile(name)
    assert profile["notebooks"]["ramia_beyond_text"]["seed"] == profile["lab"]["seed"]
    redrawn = text.replace("  seed: &draw 0", "  seed: &draw 3", 1)
    assert redrawn != text
    (tmp_path / f"{name}.yml").write_text(redrawn, encoding="utf-8")
    params = resolve_params("ramia_beyond_text", name, profiles_dir=tmp_path)
    assert params["seed"] == 3 and load_profile(name, tmp_path)["lab"]["seed"] == 3


# ------------------------------------------------------------------ lab draws


@pytest.mark.parametrize("name", ["lab", "smoke"])
def test_a_draw_redraws_the_lab_and_every_value_tied_to_it(name):
    own, drawn = load_profile(name), load_profile(name, draw=7)
    assert own["lab"]["seed"] == 0 and drawn["lab"]["seed"] == 7
    assert drawn["notebooks"]["ramia_beyond_text"]["seed"] == 7  # tied with *draw in the profile
    assert own["notebooks"]["ramia_beyond_text"]["seed"] == 0
    # nothing else moves
    assert {**drawn["lab"], "seed": 0} == own["lab"]
    assert load_profile(name, draw=0) == own


def test_a_draw_of_a_profile_without_the_anchor_sets_its_lab_seed(tmp_path):
    (tmp_path / "mine.yml").write_text("lab:\n  seed: 1  # &draw 9 in a comment is not the anchor\nnotebooks: {}\n")
    assert load_profile("mine", tmp_path, draw=4)["lab"]["seed"] == 4
    assert load_profile("mine", tmp_path)["lab"]["seed"] == 1
    (tmp_path / "mine.yml").write_text("lab:\n  seed: &draw 0  # the draw\nnotebooks:\n  x: {seed: *draw}\n")
    assert load_profile("mine", tmp_path, draw=4) == {"lab": {"seed": 4}, "notebooks": {"x": {"seed": 4}}}


@pytest.mark.parametrize(
    "text,draw,match",
    [
        ("notebooks: {}\n", 2, "no embedded lab"),
        ("lab:\n  seed: &draw 0\n  other: &draw 1\n", 2, "anchor &draw 2 times"),
        ("lab:\n  seed: 1\n  rate: &draw 0.5\n", 2, "block line `key: &draw <integer>`"),  # never 2.5
        ("lab: {seed: &draw 0}\n", 2, "block line `key: &draw <integer>`"),  # flow style: its aliases would stay
        ("lab:\n  other: &draw 1\n  seed: 0\n", 2, "is not the lab's seed"),
        ("lab:\n  seed: &draw 0\n", -1, "integer >= 0"),
        ("lab:\n  seed: &draw 0\n", True, "integer >= 0"),
        ("lab:\n  seed: &draw 0\n", "3", "integer >= 0"),
    ],
)
def test_a_bad_draw_is_named(tmp_path, text, draw, match):
    (tmp_path / "mine.yml").write_text(text)
    with pytest.raises(ValueError, match=match):
        load_profile("mine", tmp_path, draw=draw)
