"""The ``ray`` engine on the smoke lab: same signals as the local engine, a killed worker's batch retried,
an interrupted driver resumed from the cache, a cached run with no forward pass, an unreachable cluster
in one line. One local cluster (2 CPUs, 2 workers) serves the whole module."""

import json
import os
import signal
import time

import numpy as np
import pytest

from mimirlib import audit
from mimirlib.core import engines, signals
from mimirlib.core.engines import EngineError, RayEngine, resolve_engine
from mimirlib.core.models import load_model
from mimirlib.core.signals import SignalCache, compute_signals

WINDOW, STRIDE = 32, 16  # short windows: the lab's texts span several, so sliding windows are exercised
UNREACHABLE = "127.0.0.1:1"  # nothing listens on port 1: the connection is refused at once
# Seconds each batch waits on its worker in the killed-worker test, so that the batches in flight when
# the first result arrives are surely still running when their worker is killed.
SLOW_BATCH_S = 0.5


# ----------------------------------------------------------------------------- no cluster needed


def test_engine_names_and_settings_are_checked():
    assert resolve_engine("local") is None
    assert resolve_engine("ray", "auto") == RayEngine(address="auto")
    with pytest.raises(ValueError, match="'spark'"):
        resolve_engine("spark")
    with pytest.raises(ValueError, match="needs engine='ray'"):
        resolve_engine("local", "auto")
    with pytest.raises(ValueError, match="workers"):
        RayEngine(workers=0)
    with pytest.raises(EngineError, match="not 'auto'"):
        engines.host_port("nohost")


@pytest.mark.parametrize("address", [UNREACHABLE, f"ray://{UNREACHABLE}"])
def test_unreachable_cluster_is_one_line(address, model, texts):
    pytest.importorskip("ray")
    for call in (
        lambda: engines.connect(resolve_engine("ray", address)),
        lambda: compute_signals(model, texts, window=WINDOW, stride=STRIDE, engine="ray", ray_address=address),
    ):
        t0 = time.perf_counter()
        with pytest.raises(EngineError) as err:
            call()
        assert time.perf_counter() - t0 < 30  # Ray alone would retry for a minute or more
        msg = str(err.value)
        assert "\n" not in msg and address in msg and "cannot be reached" in msg


def test_audit_command_with_unreachable_cluster_exits_2_before_loading(tmp_path, capsys, monkeypatch, smoke_lab):
    pytest.importorskip("ray")
    import mimirlib.core.models

    def no_load(*a, **k):
        raise AssertionError("a model was loaded before the cluster was checked")

    monkeypatch.setattr(mimirlib.core.models, "load_model", no_load)
    texts = smoke_lab.pool_texts("train")[:8]
    for name, part in (("m.jsonl", texts[:4]), ("n.jsonl", texts[4:])):
        (tmp_path / name).write_text("".join(json.dumps({"text": t}) + "\n" for t in part))
    argv = ["--model", str(smoke_lab.model_dir("target-h32")), "--out", str(tmp_path / "out")]
    argv += ["--members", str(tmp_path / "m.jsonl"), "--nonmembers", str(tmp_path / "n.jsonl")]
    assert audit.main(argv + ["--engine", "ray", "--ray-address", UNREACHABLE]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: engine:") and UNREACHABLE in err
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- on a local cluster


@pytest.fixture(scope="module")
def ray_engine():
    pytest.importorskip("ray")
    engine = RayEngine(workers=2, num_cpus=2)
    engines.connect(engine)
    yield engine
    engines.shutdown()


@pytest.fixture(scope="module")
def model(smoke_lab):
    return load_model(str(smoke_lab.model_dir("target-h32")), dtype="float32")


@pytest.fixture(scope="module")
def texts(smoke_lab):
    pool = smoke_lab.pool_texts("train")
    return pool[:10] + [" ".join(pool[10:13])]  # one text several times the others' length


@pytest.fixture(scope="module")
def local(model, texts):
    return compute_signals(model, texts, window=WINDOW, stride=STRIDE, batch_size=2)


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert len(x) == len(y)
        for f in ("logprob", "mean", "var"):
            assert np.abs(getattr(x, f) - getattr(y, f)).max() <= 1e-6, f


class RecordingCache(SignalCache):
    """Records every key written; ``on_put(n)`` runs before the n-th write (0-based)."""

    def __init__(self, root, on_put=None):
        super().__init__(root)
        self.written: list[str] = []
        self.puts = 0
        self.on_put = on_put

    def put_many(self, model_id, window, stride, items):
        if self.on_put is not None:
            self.on_put(self.puts)
        self.puts += 1
        super().put_many(model_id, window, stride, items)
        self.written += list(items)


def test_ray_signals_equal_local_ones(ray_engine, model, texts, local):
    got = compute_signals(model, texts, window=WINDOW, stride=STRIDE, batch_size=2, engine=ray_engine)
    assert_same(got, local)
    stats = engines.current_pool().stats()
    assert len(stats) == 2 and all(s["batches"] > 0 for s in stats), stats  # both workers took batches
    assert all(s["loads"] == 1 for s in stats), stats  # each worker loaded the model once for all its batches


def test_killed_worker_has_its_batch_retried(ray_engine, model, texts, local, tmp_path, monkeypatch):
    def slow_score(loaded, ids, **kw):  # runs on the workers, where mimirlib.core.signals is not patched
        import time as t

        from mimirlib.core import signals as s

        t.sleep(SLOW_BATCH_S)
        return s.score_ids(loaded, ids, **kw)

    monkeypatch.setattr(signals, "score_ids", slow_score)
    pool = engines.pool_for(ray_engine)
    pids = pool.pids()
    killed = {}

    def kill_busy_worker(_):
        if killed:
            return
        busy = [a for a, n in enumerate(pool.in_flight) if n > 0]
        assert busy, "no batch in flight when the first result arrived"
        a = busy[0]
        killed.update(actor=a, pid=pids[a])
        os.kill(pids[a], signal.SIGKILL)

    cache = RecordingCache(tmp_path / "signals", on_put=kill_busy_worker)
    submitted = pool.submitted
    got = compute_signals(model, texts, cache=cache, window=WINDOW, stride=STRIDE, batch_size=2, engine=ray_engine)
    assert_same(got, local)
    n_batches = -(-len(texts) // 2)
    assert pool.submitted - submitted == n_batches  # each batch sent once: the retry was Ray's
    after = pool.stats()[killed["actor"]]
    assert after["pid"] != killed["pid"] and after["batches"] >= 1  # restarted, and it ran the lost batch
    assert sorted(cache.written) == sorted(set(cache.written)) == sorted({signals.text_key(t) for t in texts})


def test_interrupted_driver_resumes_from_the_cache_and_a_cached_run_does_no_forward_pass(
    ray_engine, model, texts, local, tmp_path
):
    class Interrupted(Exception):
        pass

    def interrupt_second_write(n):
        if n == 1:
            raise Interrupted

    root = tmp_path / "signals"
    kw = dict(window=WINDOW, stride=STRIDE, batch_size=2, engine=ray_engine)
    first = RecordingCache(root, on_put=interrupt_second_write)
    with pytest.raises(Interrupted):
        compute_signals(model, texts, cache=first, **kw)
    done = len(first.written)
    assert 0 < done < len(texts)  # one batch made it to disk before the driver stopped

    resumed = RecordingCache(root)
    assert_same(compute_signals(model, texts, cache=resumed, **kw), local)
    assert (resumed.hits, resumed.misses) == (done, len(texts) - done)
    assert not set(resumed.written) & set(first.written)  # nothing written twice

    pool = engines.current_pool()
    submitted, batches = pool.submitted, sum(s["batches"] for s in pool.stats())
    again = RecordingCache(root)
    assert_same(compute_signals(model, texts, cache=again, **kw), local)
    assert (again.hits, again.misses, again.written) == (len(texts), 0, [])
    assert pool.submitted == submitted and sum(s["batches"] for s in pool.stats()) == batches  # zero passes


def test_neighbours_sharded_on_ray_equal_local_ones(ray_engine, smoke_lab, texts):
    from mimirlib.samplers.neighbors import generate_neighbors, load_masked_lm

    mlm, tok = load_masked_lm(smoke_lab.masked_lm_dir())
    kw = dict(n_neighbors=3, batch_size=4, seed=1, progress=False)
    local = generate_neighbors(texts[:7], mlm, tok, **kw)
    assert generate_neighbors(texts[:7], mlm, tok, engine=ray_engine, **kw) == local
