"""The lab build's rebuild estimate (mimirlib.lab.jobs.rebuild_estimate): printed before training,
from seconds per token measured on earlier builds' models (their lab_meta.json)."""

import json

from mimirlib.lab.jobs import TrainJob, rebuild_estimate
from mimirlib.lab.layout import Lab

CFG = {"seq_len": 128, "batch_size": 8, "tokenizer": {"vocab_size": 1000}}


def measured(root, name, hidden, layers, seconds, tokens, seq_len=128, batch=8, bf16=False):
    d = root / "models" / name
    d.mkdir(parents=True)
    size = {"name": f"h{hidden}", "hidden": hidden, "layers": layers, "heads": 2}
    config = {"size": size, "seq_len": seq_len, "batch_size": batch, "bf16_autocast": bf16}
    (d / "lab_meta.json").write_text(json.dumps({"config": config, "train_seconds": seconds, "tokens_seen": tokens}))


def job(name, hidden, layers, docs, epochs=1):
    return TrainJob(name, {"name": f"h{hidden}", "hidden": hidden, "layers": layers, "heads": 2}, ["d"] * docs, epochs)


def test_estimate_uses_the_measured_rate_of_a_shape_and_scales_an_unmeasured_one(tmp_path):
    measured(tmp_path / "smoke-old", "target-h32", 32, 2, seconds=100.0, tokens=100_000)  # 1 ms per token
    measured(tmp_path / "smoke-old", "target-h99", 99, 9, seconds=1.0, tokens=10, seq_len=256)  # another recipe
    lab = Lab(tmp_path / "smoke-new", CFG)
    jobs = [job("a", 32, 2, docs=50), job("b", 64, 2, docs=125, epochs=2), job("done", 32, 2, docs=10)]
    lab.model_dir("done").mkdir(parents=True)  # trained already: not in the estimate
    line = rebuild_estimate(lab, jobs, doc_tokens=100.0, workers=2)
    cost32, cost64 = 12 * 2 * 32**2 + 32 * 1000, 12 * 2 * 64**2 + 64 * 1000
    seconds = 50 * 100 * 1e-3 + 2 * 125 * 100 * 1e-3 * cost64 / cost32
    assert f"~{seconds / 2 / 60:.1f} min on 2 worker(s)" in line
    assert line.startswith("rebuild: 2 of 3 models to train, 0.03M tokens")
    assert "measured on 1 model(s), 1 shape(s) scaled" in line


def test_no_estimate_when_nothing_is_left_and_no_number_without_a_measurement(tmp_path):
    lab = Lab(tmp_path / "smoke-new", CFG)
    lab.model_dir("a").mkdir(parents=True)
    assert rebuild_estimate(lab, [job("a", 32, 2, docs=5)], 100.0, 1) is None
    line = rebuild_estimate(lab, [job("b", 32, 2, docs=5)], 100.0, 1)
    assert "no trained model of this recipe measured yet" in line and "estimate ~" not in line
