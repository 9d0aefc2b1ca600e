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

Faults use Ray's own mechanisms: an actor whose process dies is restarted (``max_restarts``) and the
batches it held are retried on it (``max_task_retries``); a batch that still cannot run raises
:class:`EngineError`. Address: ``None`` starts a local cluster in this process (``ray.init(num_cpus=...)``,
no dashboard, quiet logs, shut down at exit) unless ``RAY_ADDRESS`` is set; ``"auto"`` or ``host:port``
or ``ray://host:port`` joins an existing one (``ray://`` needs ``ray[client]``). A cluster that cannot
be reached is one line, raised before any model is loaded. Every node needs mimirlib installed and
the models readable under the same name (a hub name, or a folder at the same path with the same files).
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import socket
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from mimirlib.progress import progress

ENGINES = ("local", "ray")
# Batches queued on one actor at a time: one running and one waiting, so that an actor never idles
# between batches while the driver stays free to send the next to whichever actor finishes first.
IN_FLIGHT_PER_WORKER = 2
# Seconds to wait for a TCP connection to a named cluster before calling it unreachable.
CONNECT_TIMEOUT_S = 5.0
# Object store of a local cluster started here: batches of token ids and signals are small (a
# 16-text batch of 2,048 tokens returns ~0.4 MB), and the machine is shared.
LOCAL_OBJECT_STORE_BYTES = 256 * 1024**2


# The agents' ports a local cluster gets from us rather than waits for (see agent_ports_given).
AGENT_PORTS = ("metrics_agent_port", "dashboard_agent_listen_port", "runtime_env_agent_port")


class EngineError(RuntimeError):
    """An engine that cannot run: unknown name, Ray missing, cluster unreachable, workers lost."""


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

    def __post_init__(self):
        for name, least in (("workers", 1), ("cpus_per_worker", 1), ("models_per_worker", 1), ("max_restarts", 0)):
            v = getattr(self, name)
            if v is None and name == "workers":
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                raise ValueError(f"RayEngine {name} must be an integer >= {least}, got {v!r}")
        check_address(self.address)

    @property
    def target(self) -> str:
        """The cluster this engine runs on: an address, or ``"local"`` for one started here."""
        return self.address or os.environ.get("RAY_ADDRESS") or "local"


# What a cluster address may be: Ray's own "auto", or a head's host:port (ray:// for Ray Client).
ADDRESS = re.compile(r"(auto|(ray://)?[A-Za-z0-9_.\-]+:\d{1,5})")


def check_address(address) -> None:
    """ValueError naming ``address`` unless it is None, "auto", "host:port" or "ray://host:port"."""
    if address is not None and not (isinstance(address, str) and ADDRESS.fullmatch(address)):
        raise ValueError(f"ray_address must be None, 'auto', 'host:port' or 'ray://host:port', got {address!r}")


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


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def import_ray():
    try:
        import ray
    except ImportError:
        raise EngineError(
            "engine 'ray' needs Ray: pip install -e '.[scale]' (or pip install ray), or use engine='local'"
        ) from None
    return ray


def host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of ``host:port`` or ``ray://host:port``; None for ``auto``/``local``."""
    rest = address[len("ray://") :] if address.startswith("ray://") else address
    if rest in ("auto", "local"):
        return None
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise EngineError(f"Ray address {address!r} is not 'auto', 'host:port' or 'ray://host:port'")
    return host.strip("[]"), int(port)


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise :class:`EngineError` (one line) unless a TCP connection to ``address`` opens within
    ``timeout`` seconds: Ray itself would retry for a minute or more before failing."""
    hp = host_port(address)
    if hp is None:
        return
    try:
        socket.create_connection(hp, timeout=timeout).close()
    except OSError as e:
        why = e.strerror or type(e).__name__
        raise EngineError(
            f"Ray cluster {address!r} cannot be reached ({why}); start one there with `ray start --head`, "
            "check the address, or use engine='local'"
        ) from None


_STATE: dict = {"target": None, "owned": False, "pool": None, "atexit": False}


def connect(engine: RayEngine) -> None:
    """Join ``engine``'s cluster, or start a local one; a no-op when already connected to it.

    A connection the caller made with ``ray.init`` is used as it is. Raises :class:`EngineError`
    in one line when Ray is missing or the cluster cannot be reached (nothing is loaded before)."""
    ray = import_ray()
    target = engine.target
    if ray.is_initialized():
        if _STATE["target"] in (None, target):
            return
        check_reachable(target)  # an unreachable cluster fails without dropping the working one
        shutdown()
    check_reachable(target)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    quiet = dict(include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        if target == "local":
            with agent_ports_given():
                ray.init(
                    address="local",
                    num_cpus=engine.num_cpus or os.cpu_count() or 1,
                    object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                    _metrics_export_port=free_port(),
                    **quiet,
                )
        else:
            ray.init(address=target, **quiet)
    except Exception as e:  # Ray raises ConnectionError, ValueError, RuntimeError...: one line whatever it is
        if target == "local":
            raise EngineError(f"a local Ray cluster could not be started: {first_line(e)}") from None
        raise EngineError(f"Ray cluster {target!r} cannot be reached: {first_line(e)}") from None
    if not _STATE["atexit"]:
        atexit.register(shutdown)
        _STATE["atexit"] = True
    _STATE.update(target=target, owned=True)


def free_port() -> int:
    """A TCP port free on every interface right now."""
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


@contextmanager
def agent_ports_given():
    """Start a local cluster with its agents' ports chosen here. Given no port, the raylet waits for
    each agent to write the one it picked, at most 15 s, and dies past that (ray-project/ray#65983):
    on a busy 2-core machine the agents' imports alone took 20 s. Given the ports, it does not wait.
    Ray's ``init`` has no argument for them, so its parameters get them as they are made, and the
    raylet's command line the one its Python launcher leaves out (the agent's listening port)."""
    from ray._private import parameter, services

    ports = {name: free_port() for name in AGENT_PORTS}
    make_params, start_process = parameter.RayParams.__init__, services.start_ray_process

    def params(self, *args, **kwargs):
        make_params(self, *args, **kwargs)
        for name, port in ports.items():
            setattr(self, name, port)

    def start(command, process_type, *args, **kwargs):
        if process_type == "raylet":
            listen = next((c for c in command if c.startswith("--dashboard_agent_listen_port")), None)
            if listen is None:
                command = [*command, f"--dashboard_agent_listen_port={ports['dashboard_agent_listen_port']}"]
        return start_process(command, process_type, *args, **kwargs)

    parameter.RayParams.__init__, services.start_ray_process = params, start
    try:
        yield
    finally:
        parameter.RayParams.__init__, services.start_ray_process = make_params, start_process


def shutdown() -> None:
    """Stop this process's worker pool, and the cluster if it was started or joined here."""
    pool = _STATE["pool"]
    _STATE["pool"] = None
    if pool is not None:
        pool.close()
    if _STATE["owned"]:
        import ray

        ray.shutdown()
    _STATE.update(target=None, owned=False)


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
        self.shape = engine
        self.actors = [actor.remote(cpw, engine.models_per_worker) for _ in range(n)]
        self.in_flight = [0] * n
        self.submitted = 0
        try:
            ray.get([a.pid.remote() for a in self.actors], timeout=engine.start_timeout_s)
        except Exception as e:
            self.close()
            raise EngineError(
                f"{n} Ray worker(s) did not start within {engine.start_timeout_s:g} s: {first_line(e)}"
            ) from None

    def pids(self) -> list[int]:
        import ray

        return ray.get([a.pid.remote() for a in self.actors])

    def stats(self) -> list[dict]:
        import ray

        return ray.get([a.stats.remote() for a in self.actors])

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
    connect(engine)
    pool = _STATE["pool"]
    shape = (
        engine.workers,
        engine.cpus_per_worker,
        engine.gpus_per_worker,
        engine.models_per_worker,
        engine.max_restarts,
    )
    if pool is not None:
        old = pool.shape
        if (old.workers, old.cpus_per_worker, old.gpus_per_worker, old.models_per_worker, old.max_restarts) == shape:
            return pool
        pool.close()
        _STATE["pool"] = None
    _STATE["pool"] = Pool(engine)
    return _STATE["pool"]


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

    Raises :class:`EngineError` naming the failure when a batch fails or its worker is lost for good.
    Closing the generator early (the caller failed) cancels the batches still queued."""
    ray = import_ray()
    pool = pool_for(engine)
    order = sorted(range(len(batches)), key=lambda b: -costs[b]) if costs is not None else list(range(len(batches)))
    pending: dict = {}
    nxt = 0

    def send():
        nonlocal nxt
        while nxt < len(order):
            a = min(range(len(pool.actors)), key=lambda i: pool.in_flight[i])
            if pool.in_flight[a] >= IN_FLIGHT_PER_WORKER:
                return
            b = order[nxt]
            nxt += 1
            pending[pool.actors[a].run.remote(spec, fn, batches[b], kwargs)] = (b, a)
            pool.in_flight[a] += 1
            pool.submitted += 1

    bar = progress(total=len(batches), desc=desc)
    try:
        send()
        while pending:
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            b, a = pending.pop(ref)
            pool.in_flight[a] -= 1
            try:
                out = ray.get(ref)
            except ray.exceptions.RayActorError as e:
                raise EngineError(
                    f"a Ray worker was lost for good on batch {b} "
                    f"(restarted {engine.max_restarts} times): {first_line(e)}"
                ) from None
            except ray.exceptions.RayTaskError as e:
                raise EngineError(
                    f"a Ray worker failed on batch {b}: {first_line(getattr(e, 'cause', None) or e)}"
                ) from None
            bar.update(1)
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
