"""The real path on local files laid out exactly like the MIMIR dataset repository."""

import json

import pytest

from mimirlib.core import hub
from mimirlib.core.data import BenchmarkError, load_benchmark


def make_repo(root, config="wikipedia_(en)", split="ngram_13_0.8", n=3, neighbours=2):
    files = hub.mimir_files(config, split)
    data = {
        "member": [f"member text {i} about history" for i in range(n)],
        "nonmember": [f"non-member text {i} about geography" for i in range(n)],
        "member_neighbors": [[f"member txt {i} v{j}" for j in range(neighbours)] for i in range(n)],
        "nonmember_neighbors": [[f"non-member txt {i} v{j}" for j in range(neighbours)] for i in range(n)],
    }
    for key, rel in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(json.dumps(x) + "\n" for x in data[key]))
    return data


def test_local_copy_of_the_dataset_repo_loads_by_real_names(tmp_path):
    data = make_repo(tmp_path)
    b = load_benchmark(tmp_path, "wikipedia_(en)", "ngram_13_0.8")
    assert list(b.members) == data["member"] and b.has_neighbors
    assert b.member_neighbors[1] == tuple(data["member_neighbors"][1])


def test_full_pile_and_none_split_paths():
    f = hub.mimir_files("full_pile", "none")
    assert f["member"] == "cache_100_200_10000_512/train/full_pile.jsonl"
    assert hub.mimir_files("temporal_arxiv", "2021_06")["nonmember"].endswith("test/temporal_arxiv_2021_06.jsonl")


def test_unknown_names_list_valid_ones():
    with pytest.raises(BenchmarkError, match="valid"):
        hub.mimir_files("wikipedia", "ngram_13_0.8")
    with pytest.raises(BenchmarkError, match="ngram_7_0.2"):
        hub.mimir_files("github", "ngram_5_0.1")


def test_missing_file_is_named(tmp_path):
    make_repo(tmp_path)
    with pytest.raises(BenchmarkError, match="github_ngram_13_0.8.jsonl"):
        load_benchmark(tmp_path, "github", "ngram_13_0.8")


def test_hub_unreachable_says_what_to_do(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    with pytest.raises(BenchmarkError, match="(offline|hub)"):
        load_benchmark("iamgroot42/mimir", "github", "ngram_13_0.8", neighbors=False)


@pytest.mark.parametrize(
    "name,local",
    [
        ("gpt2", False),
        ("EleutherAI/pythia-160m-deduped", False),
        ("models/target", False),
        ("./target", True),
        ("../m", True),
        ("/abs/model", True),
        ("~/model", True),
        ("a/b/c", True),
        ("my model", True),
        ("target/", True),
        ("C:\\models\\m", True),
    ],
)
def test_is_local_path_tells_a_path_from_a_hub_name(name, local):
    assert hub.is_local_path(name) is local


def test_is_local_path_existing_folders_and_path_objects_are_local(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org" / "name").mkdir(parents=True)
    assert hub.is_local_path("org/name") and hub.is_local_path(tmp_path / "missing")
