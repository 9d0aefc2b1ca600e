"""The lab's promises: determinism, recorded data order, exact ground truth, resumable artifacts."""

import json

import pytest

from mimirlib.core.data import load_benchmark
from mimirlib.lab.build import build_lab
from mimirlib.lab.layout import MAIN_SPLIT, cut_words, expected_models
from mimirlib.lab.train import DataOrder, TrainConfig, ModelSize, checkpoint_steps, learning_rate, pack
from mimirlib.profiles import load_profile

MICRO = {
    "seed": 0,
    "domains": ["math", "changelog"],
    "doc_words": 120,
    "sample_words": 120,
    "per_domain": {"train": 24, "heldout": 16, "reference": 8},
    "members": 6,
    "temporal": {
        "domain": "changelog",
        "cutoff": "2020-01-01",
        "bins": [{"name": "2020", "start": "2020-01-01", "end": "2021-01-01"}],
    },
    "natural_duplication": {"fraction": 0.3, "max_copies": 3},
    "tokenizer": {"vocab_size": 400},
    "seq_len": 64,
    "batch_size": 4,
    "lr": 0.003,
    "n_checkpoints": 3,
    "eval_docs": 4,
    "targets": [{"name": "h8", "hidden": 8, "layers": 1, "heads": 2}],
    "natural_variant": "h8",
    "references": [{"name": "ref-disjoint-h8", "kind": "disjoint", "size": "h8"}],
    "epochs": {"size": "h8", "members": 2, "budget_docs": 16, "runs": [1, 4]},
    "n_neighbors": 0,
    "replicates": {"sizes": ["h8"], "natural": True, "seeds": [1], "dedup_seeds": [2]},
    "recency_control": {"size": "h8", "schedule_fraction": 0.692, "seeds": [1]},
}


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory):
    # each lab in a folder of its own: siblings with the same recipe would share models (lab.reuse),
    # and the determinism tests below need b trained afresh
    a = build_lab("micro", dict(MICRO), tmp_path_factory.mktemp("a") / "lab-a")
    b = build_lab("micro", dict(MICRO), tmp_path_factory.mktemp("b") / "lab-b")
    return a, b


def test_same_seed_gives_identical_corpus_order_and_losses(two_builds):
    a, b = two_builds
    for f in ("splits.json", "selection.json"):
        assert (a.root / f).read_text() == (b.root / f).read_text()
    for name in a.manifest["models"]:
        for f in ("data_order.json", "curves.json"):
            ja = json.loads((a.model_dir(name) / f).read_text())
            jb = json.loads((b.model_dir(name) / f).read_text())
            assert ja == jb, (name, f)
    for f in sorted(a.benchmarks_dir.rglob("*.jsonl")):
        assert f.read_bytes() == (b.root / f.relative_to(a.root)).read_bytes()


def test_ground_truth_members_seen_nonmembers_never(two_builds):
    lab, _ = two_builds
    for domain in MICRO["domains"]:
        truth = lab.ground_truth(domain)
        bench = load_benchmark(lab.benchmarks_dir, domain, MAIN_SPLIT)
        assert len(truth) == len(bench.members) > 0
        for row in truth:
            assert len(row["seen_steps"]["target-h8"]) == 1  # one epoch, deduplicated: seen exactly once
            assert all(n == 0 for n in row["nonmember_seen"].values())
            assert len(row["seen_steps"]["target-h8-natural"]) == row["natural_copies"]


def test_temporal_split_is_later_than_cutoff(two_builds):
    lab, _ = two_builds
    for row in lab.ground_truth("changelog", "temporal_2020"):
        assert row["nonmember_date"] >= "2020-01-01" and row["member_date"] < "2020-01-01"


def test_epoch_runs_see_their_members_epochs_times(two_builds):
    lab, _ = two_builds
    for row in lab.ground_truth("math", "epochs"):
        assert len(row["seen_steps"]["epochs-4x-h8"]) == 4
        assert len(row["seen_steps"]["epochs-1x-h8"]) == 1


def test_rebuild_reuses_artifacts(two_builds, tmp_path):
    a, _ = two_builds
    before = {p: p.stat().st_mtime_ns for p in a.root.rglob("*.safetensors")}
    again = build_lab("micro", dict(MICRO), a.root)
    assert {p: p.stat().st_mtime_ns for p in again.root.rglob("*.safetensors")} == before


def _weights(lab) -> dict:
    return {p.relative_to(lab.root).as_posix(): p for p in lab.root.glob("models/*/model.safetensors")}


def test_a_change_that_touches_no_training_reuses_every_model_and_one_that_does_retrains(two_builds):
    a, _ = two_builds
    fewer = build_lab("micro", dict(MICRO, members=4), a.root.parent / "lab-fewer-members")
    assert len(load_benchmark(fewer.benchmarks_dir, "math", MAIN_SPLIT).members) == 4
    shared, own = _weights(a), _weights(fewer)
    assert shared.keys() == own.keys() and len(own) == len(expected_models(MICRO))
    assert all(own[k].samefile(shared[k]) for k in own)  # hard links: not one model trained again
    assert json.loads((fewer.root / "fingerprints.json").read_text()) == json.loads(
        (a.root / "fingerprints.json").read_text()
    )
    other = build_lab("micro", dict(MICRO, lr=0.002), a.root.parent / "lab-other-lr")
    assert not any(p.samefile(shared[k]) for k, p in _weights(other).items())


def test_a_lab_without_fingerprints_records_them_without_training(two_builds):
    a, _ = two_builds
    prints = json.loads((a.root / "fingerprints.json").read_text())
    before = {k: p.stat().st_mtime_ns for k, p in _weights(a).items()}
    (a.root / "fingerprints.json").unlink()  # a lab built before models were fingerprinted
    build_lab("micro", dict(MICRO), a.root)
    assert json.loads((a.root / "fingerprints.json").read_text()) == prints
    assert {k: p.stat().st_mtime_ns for k, p in _weights(a).items()} == before


def test_pack_records_every_step_of_a_document():
    cfg = TrainConfig(size=ModelSize("x", 8, 1, 2), seq_len=4, batch_size=2, epochs=2, seed=1)
    ids = ["a", "b", "c"]
    toks = [[1] * 5, [2] * 3, [3] * 7]
    windows, order = pack(ids, toks, 0, cfg)
    assert windows.shape == (order.steps * 2, 4)
    value = dict(zip(ids, (1, 2, 3)))
    for doc, spans in order.spans.items():
        assert 1 <= len(spans) <= 2
        for first, last in spans:
            assert 1 <= first <= last <= order.steps
            seen = windows[(first - 1) * 2 : last * 2].reshape(-1)
            assert value[doc] in seen  # the recorded steps really contain the document's tokens
    assert isinstance(order, DataOrder)


def test_checkpoints_are_log_then_regular_and_end_at_total():
    steps = checkpoint_steps(300, 8)
    assert steps[-1] == 300 and steps[0] == 1 and steps == sorted(set(steps))


def test_cut_words_keeps_line_breaks():
    assert cut_words("a b\nc d e", 3) == "a b\nc"


def test_profiles_define_a_lab():
    for name in ("smoke", "lab"):
        lab = load_profile(name)["lab"]
        assert set(lab["domains"]) <= {"code", "licenses", "math", "docs", "encyclopedia", "changelog"}
        assert len(lab["targets"]) >= 2
    assert len(load_profile("lab")["lab"]["targets"]) >= 4
    assert len(load_profile("lab")["lab"]["domains"]) >= 6


def test_seen_in_window_returns_documents_trained_in_those_steps(two_builds):
    lab, _ = two_builds
    order = lab.data_order("target-h8")
    last = order.steps
    docs = order.seen_in_window(last - 2, last)
    assert docs
    for d in docs:
        ((first, end),) = order.spans[d]
        assert last - 2 <= first and end <= last
    assert set(order.seen_in_window(1, last)) == set(order.spans)  # one epoch: everything, once
    texts = lab.trained_texts()
    assert all(d in texts for d in docs)
    assert lab.checkpoints("target-h8")[-1] == last


def test_seed_replicates_differ_from_the_seed_0_model_but_see_the_same_documents(two_builds):
    lab, _ = two_builds
    assert lab.seed_replicates("target-h8") == ["target-h8", "target-h8-seed1"]
    assert lab.seed_replicates("target-h8-natural") == ["target-h8-natural", "target-h8-natural-seed1"]
    assert lab.seed_replicates("ref-disjoint-h8") == ["ref-disjoint-h8"]
    pair = ["target-h8-natural", "target-h8-natural-seed1", "target-h8-natural-seed2"]
    assert lab.seed_replicates("target-h8-natural", dedup=True) == pair  # dedup_seeds: the pair only
    assert lab.manifest["models"]["target-h8-natural-seed2"]["config"]["seed"] == 2
    a, b = (lab.data_order(m) for m in lab.seed_replicates("target-h8"))
    assert sorted(a.spans) == sorted(b.spans)  # the same documents ...
    assert a.spans != b.spans  # ... in another order
    ca, cb = (json.loads((lab.model_dir(m) / "curves.json").read_text()) for m in lab.seed_replicates("target-h8"))
    assert ca[0]["train_loss_batch"] != cb[0]["train_loss_batch"]  # another initialisation
    assert lab.manifest["models"]["target-h8-seed1"]["config"]["seed"] == 1


def test_dedup_seeds_replicate_the_deduplication_pair_only():
    from mimirlib.lab.layout import replicate_seeds

    cfg = {
        "targets": [{"name": "h8"}, {"name": "h16"}],
        "natural_variant": "h16",
        "references": [],
        "replicates": {"sizes": ["h8", "h16"], "natural": True, "seeds": [1, 2], "dedup_seeds": [2, 3]},
    }
    assert replicate_seeds(cfg, "target-h16", dedup=True) == replicate_seeds(cfg, "target-h16-natural", dedup=True)
    assert replicate_seeds(cfg, "target-h16", dedup=True) == [1, 2, 3]  # a seed listed twice is trained once
    assert replicate_seeds(cfg, "target-h16") == [1, 2]  # other chapters read the common seeds
    assert replicate_seeds(cfg, "target-h8", dedup=True) == [1, 2]  # not one of the pair
    names = expected_models(cfg)
    assert "target-h16-seed3" in names and "target-h16-natural-seed3" in names and "target-h8-seed3" not in names


def test_recency_control_stops_where_pythias_step_99000_sits_in_its_schedule(two_builds):
    lab, _ = two_builds
    name = lab.recency_control()
    assert name == "target-h8-sched69" and lab.recency_control_target() == "target-h8"
    meta, base = lab.manifest["models"][name], lab.manifest["models"]["target-h8"]
    assert meta["config"]["schedule_fraction"] == 0.692 and base["config"]["schedule_fraction"] == 1.0
    assert meta["steps"] == base["steps"]  # same data, same number of steps; only the schedule differs
    assert lab.data_order(name).spans == lab.data_order("target-h8").spans


def test_the_recency_controls_replicate_pairs_with_its_targets_replicate_of_the_same_seed(two_builds):
    lab, _ = two_builds
    assert lab.seed_replicates("target-h8-sched69") == ["target-h8-sched69", "target-h8-sched69-seed1"]
    assert lab.control_pairs() == [("target-h8-sched69", "target-h8"), ("target-h8-sched69-seed1", "target-h8-seed1")]
    meta, twin = lab.manifest["models"]["target-h8-sched69-seed1"], lab.manifest["models"]["target-h8-seed1"]
    assert meta["config"]["schedule_fraction"] == 0.692 and meta["config"]["seed"] == twin["config"]["seed"] == 1
    assert lab.data_order("target-h8-sched69-seed1").spans == lab.data_order("target-h8-seed1").spans
    assert lab.data_order("target-h8-sched69-seed1").spans != lab.data_order("target-h8-sched69").spans


def test_a_recency_control_seed_its_target_has_no_replicate_of_is_refused_by_name():
    from mimirlib.lab.layout import control_seeds

    cfg = {
        "targets": [{"name": "h8"}],
        "natural_variant": "h8",
        "references": [],
        "replicates": {"sizes": ["h8"], "seeds": [1, 2]},
        "recency_control": {"size": "h8", "schedule_fraction": 0.692, "seeds": [2]},
    }
    assert control_seeds(cfg) == [2] and "target-h8-sched69-seed2" in expected_models(cfg)
    cfg["recency_control"]["seeds"] = [2, 5]
    with pytest.raises(ValueError, match=r"recency_control.seeds \[5\] are not replicate seeds of target-h8"):
        expected_models(cfg)
    del cfg["recency_control"]["seeds"]
    assert control_seeds(cfg) == [] and "target-h8-sched69" in expected_models(cfg)


def test_schedule_fraction_leaves_pythias_learning_rate_at_the_last_step():
    full = TrainConfig(size=ModelSize("t", 8, 1, 2), lr=1.0)
    pythia = TrainConfig(size=ModelSize("t", 8, 1, 2), lr=1.0, schedule_fraction=0.692)
    assert learning_rate(full, 1000, 1000) == pytest.approx(0.1)  # the lab's targets end at 10% of the peak
    assert learning_rate(pythia, 1000, 1000) == pytest.approx(0.295, abs=0.005)  # Pythia's step 99,000 of 143,000
    assert learning_rate(pythia, 10, 1000) == pytest.approx(learning_rate(full, 10, 1000), rel=0.01)  # same warm-up


def test_training_plan_trains_exactly_the_models_a_complete_lab_expects(two_builds):
    from mimirlib.lab.jobs import training_jobs
    from mimirlib.lab.stages import StageLog, prepare_corpus
    from mimirlib.lab.layout import expected_models

    lab, _ = two_builds
    c = prepare_corpus(lab, StageLog("micro", {}))
    jobs = training_jobs(lab.config, c, json.loads((lab.root / "selection.json").read_text()))
    assert [j.name for j in jobs] == [n for n in expected_models(lab.config)]
    by = {j.name: j for j in jobs}
    assert by["target-h8-natural"].ids != by["target-h8"].ids  # the natural twin repeats documents
    assert by["target-h8-natural-seed1"].ids == by["target-h8-natural"].ids and by["target-h8-natural-seed1"].seed == 1
    assert not by["ref-disjoint-h8"].from_pool and set(by["ref-disjoint-h8"].ids).isdisjoint(by["target-h8"].ids)


def test_lab_jobs_comes_from_the_environment_and_names_a_bad_value(monkeypatch):
    import os

    from mimirlib.lab.jobs import lab_jobs

    monkeypatch.delenv("MIMIR_LAB_JOBS", raising=False)
    assert lab_jobs() == min(2, os.cpu_count() or 1)
    monkeypatch.setenv("MIMIR_LAB_JOBS", "3")
    assert lab_jobs() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("MIMIR_LAB_JOBS", bad)
        with pytest.raises(ValueError, match="MIMIR_LAB_JOBS"):
            lab_jobs()


def test_training_cost_puts_the_largest_models_first():
    from mimirlib.lab.jobs import TrainJob, train_cost

    cfg = {"tokenizer": {"vocab_size": 8000}}
    small = TrainJob("s", {"hidden": 32, "layers": 2}, ["a"] * 10)
    big = TrainJob("b", {"hidden": 256, "layers": 4}, ["a"] * 10)
    twice = TrainJob("e", {"hidden": 32, "layers": 2}, ["a"] * 10, epochs=2)
    assert train_cost(cfg, big) > train_cost(cfg, twice) == 2 * train_cost(cfg, small)


def _loss_and_grads(model, x, loss_fn, bf16):
    import torch

    model.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = loss_fn(model, x)
    loss.backward()
    return float(loss.detach()), {n: p.grad.clone() for n, p in model.named_parameters()}


def test_fused_output_loss_equals_the_unfused_loss_and_its_gradients():
    """The training loss with the output layer fused (chunked, gradients computed in the forward pass)
    is the same function as transformers' ``model(input_ids=x, labels=x).loss``: float32 to 1e-6 in the
    loss and every parameter's gradient; in bfloat16 no further from the float32 gradients than the
    unfused bfloat16 path is. 300 positions span three chunks, the last one partial."""
    import torch
    from transformers import GPTNeoXForCausalLM

    from mimirlib.lab.train import LOSS_CHUNK, causal_lm_loss, neox_config

    torch.manual_seed(0)
    model = GPTNeoXForCausalLM(neox_config(ModelSize("t", 32, 2, 2), 300, 64, 0))
    x = torch.randint(0, 300, (5, 61))
    assert LOSS_CHUNK < 5 * 60 < 3 * LOSS_CHUNK
    unfused = lambda m, x: m(input_ids=x, labels=x).loss  # noqa: E731
    fused32 = lambda m, x: causal_lm_loss(m, x, bf16=False)  # noqa: E731
    fused16 = lambda m, x: causal_lm_loss(m, x, bf16=True)  # noqa: E731
    ref_loss, ref = _loss_and_grads(model, x, unfused, False)
    loss, got = _loss_and_grads(model, x, fused32, False)
    assert loss == pytest.approx(ref_loss, abs=1e-6)
    for name in ref:
        assert torch.allclose(got[name], ref[name], atol=1e-6, rtol=1e-5), name
    _, hf16 = _loss_and_grads(model, x, unfused, True)
    loss16, ours16 = _loss_and_grads(model, x, fused16, True)
    assert loss16 == pytest.approx(ref_loss, abs=0.02)
    err = lambda g: max(float((g[n] - ref[n]).norm() / ref[n].norm()) for n in ref)  # noqa: E731
    assert err(ours16) <= 2 * err(hf16) + 1e-3


# ----------------------------------------------------------------------------- the resume point


class _Payload:
    """Unpickling this runs code: it writes ``marker`` (what a tampered resume file could do)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def _model_and_optimizer():
    import torch

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    model(torch.randn(5, 4)).sum().backward()
    opt.step()
    return model, opt


def test_a_resume_point_round_trips_as_weights_only(tmp_path):
    import torch

    from mimirlib.lab.train import load_resume, save_resume

    model, opt = _model_and_optimizer()
    path = tmp_path / "resume.pt"
    curves = [{"step": 4, "tokens": 4096, "train_loss_batch": 5.5, "train_loss": 5.25}]
    save_resume(path, model, opt, 4, curves)
    state = torch.load(path, weights_only=True)  # what train() reads: tensors and plain values only
    assert state["step"] == 4 and state["curves"] == curves
    again = load_resume(path)
    fresh, fresh_opt = torch.nn.Linear(4, 3), torch.optim.AdamW(torch.nn.Linear(4, 3).parameters())
    fresh.load_state_dict(again["model"])
    fresh_opt.load_state_dict(again["opt"])
    assert all(torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), model.state_dict().values()))
    assert fresh_opt.state_dict()["param_groups"][0]["betas"] == (0.9, 0.95)
    assert load_resume(tmp_path / "none.pt") is None


def test_a_resume_point_as_train_wrote_it_before_still_loads(tmp_path):
    """Labs interrupted under the old code (torch.save of the same dict, read back unrestricted)
    resume under the weights-only reader."""
    import torch

    from mimirlib.lab.train import load_resume

    model, opt = _model_and_optimizer()
    path = tmp_path / "resume.pt"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": 7, "curves": []}, path)
    assert load_resume(path)["step"] == 7


def test_a_pickle_that_runs_code_is_refused_and_training_starts_afresh(tmp_path):
    import torch

    from mimirlib.lab.train import load_resume

    marker = tmp_path / "ran"
    path = tmp_path / "resume.pt"
    torch.save({"model": _Payload(marker), "opt": {}, "step": 3, "curves": []}, path)
    assert load_resume(path) is None
    assert not marker.exists()  # the payload never ran
    assert not path.exists()  # and the file is gone: the next checkpoint writes a clean one
    path.write_bytes(b"not a torch file")
    assert load_resume(path) is None and not path.exists()


def test_a_rebuilt_snapshot_makes_a_new_lab_key(monkeypatch):
    from mimirlib.lab import corpus, layout

    cfg = {"seed": 0, "domains": ["code", "math"], "members": 10}
    real = corpus.snapshot_manifest()
    key, code_only = layout.config_key(cfg), layout.config_key({**cfg, "domains": ["code"]})
    assert layout.config_key({**cfg, "neighbors": {"unit": "word"}}) == key  # neighbours key the masked LM only
    changed = {**real, "domains": {**real["domains"], "math": {**real["domains"]["math"], "sha256": "0" * 64}}}
    monkeypatch.setattr(corpus, "snapshot_manifest", lambda root=None: changed)
    assert layout.config_key(cfg) != key
    assert layout.config_key({**cfg, "domains": ["code"]}) == code_only  # a domain the lab does not use: same lab


def test_a_replicate_never_trains_as_the_labs_own_model_whatever_the_draw():
    from mimirlib.lab.layout import replicate_training_seed

    assert [replicate_training_seed({"seed": 0}, s) for s in (1, 2, 3, 4)] == [1, 2, 3, 4]  # the book's draw: unchanged
    assert [replicate_training_seed({"seed": 3}, s) for s in (1, 2, 3, 4)] == [4, 5, 6, 7]  # never 3, the lab's own
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="replicate seed"):
            replicate_training_seed({"seed": 3}, bad)


def test_a_lab_draw_is_its_own_lab_folder():
    from mimirlib.lab.build import lab_config
    from mimirlib.lab.layout import config_key

    own, drawn = lab_config("smoke"), lab_config("smoke", 5)
    assert drawn["seed"] == 5 and config_key(own) != config_key(drawn)
    assert lab_config("smoke", 0) == own
    with pytest.raises(ValueError, match="no embedded lab"):
        lab_config("paper", 1)
    with pytest.raises(ValueError, match="not both"):
        build_lab("smoke", dict(own), draw=2)


def test_a_replicate_seed_below_1_is_named_before_anything_is_built(monkeypatch):
    from mimirlib.lab import build

    bad = {"lab": {"seed": 0, "replicates": {"seeds": [1], "dedup_seeds": [0]}}}
    monkeypatch.setattr(build, "load_profile", lambda name, draw=None: bad)
    with pytest.raises(ValueError, match="replicate seed 0"):
        build.lab_config("smoke")


def test_a_recency_control_seed_without_its_targets_replicate_stops_the_build_in_one_line(monkeypatch, capsys):
    from mimirlib.lab import build

    bad = build.load_profile("smoke")
    bad["lab"]["recency_control"]["seeds"] = [1, 7]
    monkeypatch.setattr(build, "load_profile", lambda name, draw=None: bad)
    monkeypatch.setattr(build, "build_lab", lambda *a, **k: pytest.fail("built despite a bad control seed"))
    assert build.main(["--profile", "smoke"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "recency_control.seeds [7] are not replicate seeds of target-h32" in err[0]


def test_lab_build_cli_names_a_bad_draw_in_one_line_before_building(capsys):
    from mimirlib.lab.build import main

    assert main(["--profile", "smoke", "--draw", "-2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and "draw -2" in err and "Traceback" not in err
