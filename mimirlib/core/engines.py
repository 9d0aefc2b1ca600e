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
is set; ``"auto"``, ``host:port`` or ``ray://host:port`` joins one. A bad address fails in one line within
``connect_timeout_s`` (:func:`check_head`), before any model is loaded. Every node needs mimirlib installed
and the models readable under the same name (a hub name, or a folder at the same path with the same files).
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict, deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from mimirlib.progress import progress

ENGINES = ("local", "ray")
# Batches queued on one actor at a time: one running and one waiting, so that an actor never idles
# between batches while the driver stays free to send the next to whichever actor finishes first.
IN_FLIGHT_PER_WORKER = 2
# Seconds a named cluster's head has to accept a connection, then to answer as a head (user-set:
# ``RayEngine.connect_timeout_s``); the check's own start (a Python that imports Ray) is not counted.
CONNECT_TIMEOUT_S = 8.0
PROBE_START_S = 60.0
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
    """Raise :class:`EngineError` (one line) unless a TCP connection to ``address`` opens within ``timeout`` s."""
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


# Run in a fresh Python: Ray's GCS client, which retries without end against a server that is not a
# Ray head, so the caller bounds it by killing the process; its verdict is its last line.
PROBE = """import sys
from ray._raylet import GcsClient
print("start", flush=True)
try:
    GcsClient(address=sys.argv[1]).internal_kv_get(b"mimirlib", None, timeout=float(sys.argv[2]))
except Exception as e:
    code = getattr(e, "rpc_code", None)
    print("fail", type(e).__name__, f"rpc_code={code}", (str(e).strip() or "-").splitlines()[0], flush=True)
else:
    print("ok", flush=True)
"""


def connect_log(address: str) -> Path:
    """Where Ray's own messages go while ``address`` is checked and joined (kept off the terminal)."""
    folder = Path(tempfile.gettempdir()) / "mimirlib-ray"
    folder.mkdir(exist_ok=True)
    return folder / f"connect-{re.sub(r'[^A-Za-z0-9_.-]+', '_', address)}.log"


def log_note(address: str) -> str:
    return f" (Ray's messages: {log})" if (log := connect_log(address)).exists() and log.stat().st_size else ""


@contextmanager
def stderr_into(path: Path):
    """File descriptor 2 appended to ``path`` meanwhile: Ray's C++ core writes there, not to sys.stderr."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "a") as f:
        os.dup2(f.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def probe_lines(proc: subprocess.Popen, timeout: float) -> list[str]:
    """The probe's lines: its start within :data:`PROBE_START_S`, then its verdict within ``timeout``."""
    lines, buf, deadline, fd = [], b"", time.monotonic() + PROBE_START_S, proc.stdout.fileno()
    while len(lines) < 2:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        if not (chunk := os.read(fd, 4096)):
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            lines.append(line.decode(errors="replace").strip())
            if lines[-1] == "start":
                deadline = time.monotonic() + timeout
    return lines


def probe_verdict(address: str, lines: list[str], timeout: float) -> str | None:
    """None when the head answered, else why ``address`` is not a head this process can join."""
    last, where = (lines[-1] if lines else ""), f"Ray cluster {address!r}"
    token = "RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token)"
    if last.startswith("fail AuthenticationError"):
        if os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
            return f"{where} has token auth on and this process sends no token: set RAY_AUTH_MODE=token, {token}"
        return f"{where} refused this process's token, from {token}"
    if "rpc_code=12 " in last:  # UNIMPLEMENTED: a gRPC server without the GCS's services
        return f"{where}: a Ray port but not the head's; give the port of `ray start --head --port` (default 6379)"
    if last.startswith("fail"):
        return f"{where} cannot be joined: {last.split(' ', 3)[-1]}"
    if last == "start":
        return f"{where} did not answer as a Ray head within {timeout:g} s: is it the port of `ray start --head`?"
    return None if last == "ok" else f"the check of {where} did not start within {PROBE_START_S:g} s"


def check_head(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """:class:`EngineError` (one line: ``address``, the cause, the file of Ray's messages) unless ``address``
    accepts a connection, then answers as a Ray head, within ``timeout`` s each: ``ray.init`` would retry
    for minutes, a warning a second. ``auto`` and ``ray://`` get the connection check only."""
    check_reachable(address, timeout)
    if address.startswith("ray://") or host_port(address) is None:
        return
    log = connect_log(address)
    with open(log, "w") as err:
        cmd = [sys.executable, "-c", PROBE, address, str(timeout)]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
    try:
        lines = probe_lines(proc, timeout)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    if (why := probe_verdict(address, lines, timeout)) is not None:
        raise EngineError(why + log_note(address))


_STATE: dict = {"target": None, "owned": False, "pool": None, "atexit": False, "token": None}


def connect(engine: RayEngine) -> None:
    """Join ``engine``'s cluster, or start a local one; a no-op when already connected to it.

    A connection the caller made with ``ray.init`` is used as it is. Raises :class:`EngineError`
    in one line when Ray is missing or the cluster cannot be reached (nothing is loaded before)."""
    ray = import_ray()
    target = engine.target
    if ray.is_initialized():
        if _STATE["target"] in (None, target):
            return
        check_head(target, engine.connect_timeout_s)  # a bad address fails without dropping the working one
        shutdown()
    check_head(target, engine.connect_timeout_s)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    quiet = dict(include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        if target == "local":
            with agent_ports_given(), own_token():
                ray.init(
                    address="local",
                    num_cpus=engine.num_cpus or os.cpu_count() or 1,
                    object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                    _metrics_export_port=free_port(),
                    **quiet,
                )
        else:
            with stderr_into(connect_log(target)):  # Ray's C++ core warns on stderr while it retries
                ray.init(address=target, **quiet)
    except Exception as e:  # Ray raises ConnectionError, ValueError, RuntimeError...: one line whatever it is
        if target == "local":
            raise EngineError(f"a local Ray cluster could not be started: {first_line(e)}") from None
        raise EngineError(f"Ray cluster {target!r} cannot be reached: {first_line(e)}{log_note(target)}") from None
    if not _STATE["atexit"]:
        atexit.register(shutdown)
        _STATE["atexit"] = True
    _STATE.update(target=target, owned=True)


def cluster_cpus(engine: RayEngine) -> int:
    """The CPUs of ``engine``'s cluster (joined, or started, now): how many shards keep it busy."""
    connect(engine)
    return max(1, int(import_ray().cluster_resources().get("CPU", 1)))


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


# What a user sets to choose Ray's token authentication: any of them leaves it all to Ray.
AUTH_ENV = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


@contextmanager
def own_token():
    """Start a local cluster with token auth and a token of this process's (in the environment its
    processes inherit), not one Ray would save to ``~/.ray/auth_token``: a later ``ray start --head``
    finds that file and turns token auth on, silently, so that its other nodes cannot join."""
    if any(os.environ.get(k) for k in AUTH_ENV):
        yield
        return
    import secrets

    _STATE["token"] = _STATE["token"] or secrets.token_hex(32)  # one per process: Ray's core caches it
    os.environ["RAY_AUTH_TOKEN"] = _STATE["token"]
    try:
        yield
    finally:
        for k in AUTH_ENV[:2]:  # the mode too: Ray sets it in this process's environment for good
            os.environ.pop(k, None)


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
    connect(engine)
    pool = _STATE["pool"]
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
                pool.lose(a)
                order.appendleft(b)  # to a surviving worker, first
                if not pool.live():
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
