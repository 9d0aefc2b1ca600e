"""Where forward passes run: ``local`` (this process) or ``ray`` (actors on a Ray cluster).

:func:`mimirlib.core.signals.compute_signals` decides *what* to compute (texts not in the cache, tokenized,
sorted by length, cut into batches) and writes the cache; an engine only runs batches. The ``ray``
engine (:class:`RayEngine`, Ray Core) keeps one pool of actors per process, one actor per GPU (or per
``cpus_per_worker`` CPUs on a CPU cluster). Each actor loads a model once, from the same name,
revision and precision as the caller's, checks that its identity (``LoadedModel.cache_id``) is the
caller's, and keeps its last ``models_per_worker`` models loaded, so a chapter that alternates target
and reference models loads each once per worker. Batches go out the most expensive first, at most
:data:`IN_FLIGHT_PER_WORKER` per actor at a time, to the actor with the least work; results come back
as they finish and the caller writes each batch's cache entries in one transaction, so an interrupted
driver resumes from what it finished and no entry is written twice.

Faults: an actor whose process dies is restarted by Ray (``max_restarts``), which retries the batches
it held (``max_task_retries``); an actor lost for all that (its node gone) is dropped and its batches go
to the others; the run stops when none is left, or when a batch raises. Address: ``None`` starts a
local cluster here (no dashboard, quiet logs, its own auth token, shut down at exit) unless ``RAY_ADDRESS``
is set; ``"auto"``, ``host:port`` or ``ray://host:port`` joins one (:mod:`mimirlib.core.ray_cluster`:
a bad address fails in one line within ``connect_timeout_s``, before any model is loaded). Every node
needs mimirlib installed and the models readable under the same name (a hub name, or a folder at the
same path with the same files). The driver needs no weights: ``load_model(..., weights=False)``.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from mimirlib.core import ray_cluster
from mimirlib.core.ray_cluster import (
    CONNECT_TIMEOUT_S,
    EngineError,
    check_address,
    first_line,
    import_ray,
)
from mimirlib.progress import progress

ENGINES = ("local", "ray")

# Batches queued on one actor at a time: one running and one waiting, so that an actor never idles
# between batches while the driver stays free to send the next to whichever actor finishes first.
IN_FLIGHT_PER_WORKER = 2


@dataclass(frozen=True)
class RayEngine:
    """The ``ray`` engine's settings. ``workers=None``: one per GPU of the cluster, or, without GPUs,
    one per ``cpus_per_worker`` CPUs; ``num_cpus`` sizes a local cluster started here (None: all)."""

    address: str | None = None
    workers: int | None = None
    cpus_per_worker: int = 1
    gpus_per_worker: float | None = None
    models_per_worker: int = 2
    max_restarts: int = 3
    num_cpus: int | None = None
    start_timeout_s: float = 300.0
    connect_timeout_s: float = CONNECT_TIMEOUT_S

    def __post_init__(self):
        t = self.connect_timeout_s
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0:
            raise ValueError(f"RayEngine connect_timeout_s must be a number of seconds > 0, got {t!r}")
        for name, least in (("workers", 1), ("cpus_per_worker", 1), ("models_per_worker", 1), ("max_restarts", 0)):
            v = getattr(self, name)
            if v is None and name == "workers":
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                raise ValueError(f"RayEngine {name} must be an integer >= {least}, got {v!r}")
        g = self.gpus_per_worker
        if g is not None and (isinstance(g, bool) or not isinstance(g, (int, float)) or not g >= 0):
            raise ValueError(f"RayEngine gpus_per_worker must be a number >= 0 (0.5: two workers a GPU), got {g!r}")
        check_address(self.address)

    @property
    def target(self) -> str:
        """The cluster this engine runs on: an address, or ``"local"`` for one started here."""
        return self.address or os.environ.get("RAY_ADDRESS") or "local"


def resolve_engine(engine="local", ray_address: str | None = None) -> RayEngine | None:
    """``None`` for the local engine, else the :class:`RayEngine` to use; ValueError names a bad value.

    ``engine`` is ``"local"``, ``"ray"`` (with ``ray_address``) or a :class:`RayEngine`."""
    if isinstance(engine, RayEngine):
        if ray_address is not None:
            raise ValueError("give ray_address inside the RayEngine, not beside it")
        return engine
    if engine == "local":
        if ray_address is not None:
            raise ValueError(f"ray_address={ray_address!r} needs engine='ray' (the engine is 'local')")
        return None
    if engine == "ray":
        return RayEngine(address=ray_address)
    raise ValueError(f"engine must be one of {', '.join(map(repr, ENGINES))}, got {engine!r}")


# A chapter's (or any mapping's) names for the RayEngine settings a user chooses.
RAY_PARAMETERS = {
    "ray_address": "address",
    "ray_workers": "workers",
    "ray_gpus_per_worker": "gpus_per_worker",
    "ray_timeout": "connect_timeout_s",
}


class EngineParameterError(ValueError):
    """A bad engine parameter; ``name`` is the parameter's."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.name = name


def engine_from(params) -> str | RayEngine:
    """The engine a chapter's parameters choose: ``"local"``, or the :class:`RayEngine` of its ``engine="ray"``
    and ``ray_*`` values (:data:`RAY_PARAMETERS`; None keeps a setting's default). :class:`EngineParameterError`
    for an unknown engine, a bad value, or a ``ray_*`` value beside the local engine."""
    engine = params.get("engine", "local")
    given = {k: params[k] for k in RAY_PARAMETERS if params.get(k) is not None}
    if engine not in ENGINES:
        raise EngineParameterError("engine", f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    if engine == "local":
        for k, v in given.items():
            raise EngineParameterError(k, f"{k}={v!r} needs engine='ray' (the engine is 'local')")
        return "local"
    for k, v in given.items():
        try:
            RayEngine(**{RAY_PARAMETERS[k]: v})
        except ValueError as e:
            raise EngineParameterError(k, first_line(e)) from None
    return RayEngine(**{RAY_PARAMETERS[k]: v for k, v in given.items()})


_STATE: dict = {"pool": None, "session": None}  # this process's worker pool, and the connection it was made on


def shutdown() -> None:
    """Stop this process's worker pool, and the cluster if it was started or joined here."""
    pool = _STATE["pool"]
    _STATE["pool"] = None
    if pool is not None:
        pool.close()
    ray_cluster.disconnect()


@dataclass(frozen=True)
class ModelSpec:
    """How a worker loads the caller's causal LM, and the identity it must then have."""

    name: str
    revision: str | None
    dtype: str
    cache_id: str

    @property
    def key(self) -> str:
        return self.cache_id

    def load(self):
        from mimirlib.core.models import load_model

        loaded = load_model(self.name, self.revision, dtype=self.dtype)
        if loaded.cache_id != self.cache_id:
            raise EngineError(
                f"a Ray worker loaded model {self.name!r} as {loaded.cache_id}, the driver has {self.cache_id}: "
                "every node must read the same model files"
            )
        return loaded


def model_spec(loaded) -> ModelSpec:
    """The :class:`ModelSpec` of a :class:`mimirlib.core.models.LoadedModel`."""
    name = str(loaded.name)
    if Path(name).is_dir():  # workers may start elsewhere: a folder by its absolute path
        name = str(Path(name).resolve())
    return ModelSpec(name, loaded.revision, str(loaded.dtype).replace("torch.", ""), loaded.cache_id)


class Worker:
    """One Ray actor's state: its models (the last ``max_models`` used) and what it has done."""

    def __init__(self, threads: int, max_models: int):
        import torch

        torch.set_num_threads(threads)
        self.max_models = max_models
        self.models: OrderedDict = OrderedDict()
        self.batches = 0
        self.loads = 0

    def pid(self) -> int:
        return os.getpid()

    def stats(self) -> dict:
        """Since this actor (re)started: its process id, batches run and models loaded."""
        return {"pid": os.getpid(), "batches": self.batches, "loads": self.loads}

    def run(self, spec, fn: Callable, batch, kwargs: dict):
        loaded = self.models.pop(spec.key, None)
        if loaded is None:
            loaded = spec.load()
            self.loads += 1
        self.models[spec.key] = loaded
        while len(self.models) > self.max_models:
            self.models.popitem(last=False)
        out = fn(loaded, batch, **kwargs)
        self.batches += 1
        return out


class Pool:
    """The actors of one :class:`RayEngine` shape. ``in_flight[a]``: batches sent to actor ``a`` and
    not yet received; ``submitted``: batches sent since the pool started (retries not counted)."""

    def __init__(self, engine: RayEngine):
        ray = import_ray()
        total = ray.cluster_resources()
        cpus, gpus = float(total.get("CPU", 0)), float(total.get("GPU", 0))
        gpw = engine.gpus_per_worker if engine.gpus_per_worker is not None else (1.0 if gpus >= 1 else 0.0)
        cpw = engine.cpus_per_worker
        n = engine.workers or (int(gpus // gpw) if gpw else int(cpus // cpw))
        if n < 1 or n * cpw > cpus or n * gpw > gpus:
            raise EngineError(
                f"Ray cluster {engine.target!r} has {cpus:g} CPUs and {gpus:g} GPUs: too few for "
                f"{n or engine.workers or 1} worker(s) of {cpw} CPU(s) and {gpw:g} GPU(s) each"
            )
        actor = ray.remote(Worker).options(
            num_cpus=cpw, num_gpus=gpw, max_restarts=engine.max_restarts, max_task_retries=engine.max_restarts
        )
        self.shape, self.in_flight, self.lost, self.submitted = engine, [0] * n, set(), 0
        for attempt in (1, 2):  # a worker whose raylet resets it while starting gets one fresh start
            self.actors = [actor.remote(cpw, engine.models_per_worker) for _ in range(n)]
            try:
                ray.get([a.pid.remote() for a in self.actors], timeout=engine.start_timeout_s)
                break
            except Exception as e:
                self.close()
                if attempt == 2:
                    raise EngineError(
                        f"{n} Ray worker(s) did not start within {engine.start_timeout_s:g} s: {first_line(e)}"
                    ) from None

    def live(self) -> list[int]:
        return [a for a in range(len(self.actors)) if a not in self.lost]

    def lose(self, a: int) -> None:
        """Stop sending to actor ``a``: lost for good (its node is gone, or it ran out of restarts)."""
        self.lost.add(a)
        try:
            import_ray().kill(self.actors[a], no_restart=True)
        except Exception:  # already gone
            pass

    def pids(self) -> list[int]:
        return import_ray().get([self.actors[a].pid.remote() for a in self.live()])

    def stats(self) -> list[dict]:
        return import_ray().get([self.actors[a].stats.remote() for a in self.live()])

    def close(self) -> None:
        import ray

        for a in self.actors:
            try:
                ray.kill(a, no_restart=True)
            except Exception:  # already gone
                pass
        self.actors = []


def current_pool() -> Pool | None:
    """This process's worker pool, if one is running (tests and benchmarks read its counters)."""
    return _STATE["pool"]


def pool_for(engine: RayEngine) -> Pool:
    """The pool for ``engine``'s shape: the running one, or a new one replacing it (one pool per process,
    so two shapes never compete for the same CPUs)."""
    ray_cluster.connect(engine)
    pool = _STATE["pool"]
    if pool is not None and _STATE["session"] != ray_cluster.session():  # made on a connection since left
        pool, _STATE["pool"] = None, None
    shape = (
        engine.workers,
        engine.cpus_per_worker,
        engine.gpus_per_worker,
        engine.models_per_worker,
        engine.max_restarts,
    )
    if pool is not None and pool.live():  # workers lost: the survivors (a dead node's CPUs count a while)
        old = pool.shape
        if (old.workers, old.cpus_per_worker, old.gpus_per_worker, old.models_per_worker, old.max_restarts) == shape:
            return pool
    if pool is not None:
        pool.close()
        _STATE["pool"] = None
    _STATE.update(pool=Pool(engine), session=ray_cluster.session())
    return _STATE["pool"]


def head_answers(engine: RayEngine, done: int, total: int) -> None:
    """:func:`ray_cluster.check_alive` within the engine's connect timeout; its error says how far the
    run got (the batches done were yielded, so the caller keeps them)."""
    try:
        ray_cluster.check_alive(engine.connect_timeout_s)
    except EngineError as e:
        raise EngineError(f"{e}; {done} of {total} batches were done (kept)") from None


def map_batches(
    engine: RayEngine,
    spec,
    fn: Callable,
    batches: Sequence,
    *,
    costs: Sequence[float] | None = None,
    desc: str = "",
    **kwargs,
) -> Iterator[tuple[int, object]]:
    """Yield ``(i, fn(model, batches[i], **kwargs))`` for every batch, as they finish, the model being
    ``spec.load()`` on a worker (loaded once per worker). Batches go out the costliest first (``costs``,
    default: their order). ``fn`` must be importable by the workers (a module-level function).

    The batches of a worker lost for good go to the others. Raises :class:`EngineError` naming the
    failure when a batch raises or every worker is lost. Closing the generator early (the caller
    failed) cancels the batches still queued."""
    ray = import_ray()
    pool = pool_for(engine)
    order = deque(sorted(range(len(batches)), key=lambda b: -costs[b]) if costs is not None else range(len(batches)))
    pending: dict = {}

    def send():
        while order:
            a = min(pool.live(), key=lambda i: pool.in_flight[i])
            if pool.in_flight[a] >= IN_FLIGHT_PER_WORKER:
                return
            b = order.popleft()
            pending[pool.actors[a].run.remote(spec, fn, batches[b], kwargs)] = (b, a)
            pool.in_flight[a] += 1
            pool.submitted += 1

    bar, done = progress(total=len(batches), desc=desc), 0
    try:
        send()
        checked = time.monotonic()
        while pending:
            if time.monotonic() - checked >= ray_cluster.HEAD_CHECK_S:  # the head, within the engine's timeout
                head_answers(engine, done, len(batches))
                checked = time.monotonic()
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=ray_cluster.HEAD_CHECK_S)
            if not ready:
                continue
            (ref,) = ready
            b, a = pending.pop(ref)
            pool.in_flight[a] -= 1
            try:
                out = ray.get(ref)
            except ray.exceptions.RayActorError as e:
                pool.lose(a)
                order.appendleft(b)  # to a surviving worker, first
                if not pool.live():
                    head_answers(engine, done, len(batches))  # all lost with the head: say so
                    raise EngineError(
                        f"all {len(pool.actors)} Ray worker(s) were lost, the last on batch {b}: {first_line(e)}"
                    ) from None
                send()
                continue
            except ray.exceptions.RayTaskError as e:
                raise EngineError(
                    f"a Ray worker failed on batch {b}: {first_line(getattr(e, 'cause', None) or e)}"
                ) from None
            bar.update(1)
            done += 1
            yield b, out
            send()
    finally:
        bar.close()
        for ref, (_, a) in pending.items():
            pool.in_flight[a] -= 1
            try:
                ray.cancel(ref)
            except Exception:  # already running or done: its result is dropped
                pass
