"""Reaching a Ray cluster: the address's form, a bounded check that a head answers there, joining it
(or starting a local one), and leaving it. :mod:`mimirlib.core.engines` runs batches on what this
module connects to; the n-gram index's Ray tasks use it too.

A bad address fails in one line within ``connect_timeout_s`` (:func:`check_head`), with Ray's own
messages in a log file the line names. A local cluster started here gets its agents' ports from us
(:func:`agent_ports_given`) and a token of this process's (:func:`own_token`), so it leaves nothing
on the machine that changes how a user's own ``ray start`` behaves.
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
from contextlib import contextmanager
from pathlib import Path

# Seconds a named cluster's head has to accept a connection, then to answer as a head (user-set:
# ``RayEngine.connect_timeout_s``); the check's own start (a Python that imports Ray) is not counted.
CONNECT_TIMEOUT_S = 8.0
PROBE_START_S = 60.0
# Seconds without a finished batch before a run asks whether the cluster's head still answers: Ray's
# core alone ends a driver whose head is gone after 60 s, with its message and none of ours.
HEAD_CHECK_S = 10.0
# Object store of a local cluster started here: batches of token ids and signals are small (a
# 16-text batch of 2,048 tokens returns ~0.4 MB), and the machine is shared.
LOCAL_OBJECT_STORE_BYTES = 256 * 1024**2


# The agents' ports a local cluster gets from us rather than waits for (see agent_ports_given).
AGENT_PORTS = ("metrics_agent_port", "dashboard_agent_listen_port", "runtime_env_agent_port")


class EngineError(RuntimeError):
    """An engine that cannot run: unknown name, Ray missing, cluster unreachable, workers lost."""


# What a cluster address may be: Ray's own "auto", or a head's host:port (ray:// for Ray Client).
ADDRESS = re.compile(r"(auto|(ray://)?[A-Za-z0-9_.\-]+:\d{1,5})")


def check_address(address) -> None:
    """ValueError naming ``address`` unless it is None, "auto", "host:port" or "ray://host:port"."""
    if address is not None and not (isinstance(address, str) and ADDRESS.fullmatch(address)):
        raise ValueError(f"ray_address must be None, 'auto', 'host:port' or 'ray://host:port', got {address!r}")


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


# This process's connection: its target, whether it was made here, and how many were made (a pool
# made on an earlier connection has lost its actors).
_STATE: dict = {"target": None, "owned": False, "atexit": False, "token": None, "session": 0}


def connect(engine) -> None:
    """Join ``engine``'s cluster (a :class:`~mimirlib.core.engines.RayEngine`: its ``target``,
    ``connect_timeout_s`` and ``num_cpus``), or start a local one; a no-op when already connected to it.

    A connection the caller made with ``ray.init`` is used as it is. Raises :class:`EngineError`
    in one line when Ray is missing or the cluster cannot be reached (nothing is loaded before)."""
    ray = import_ray()
    target = engine.target
    if ray.is_initialized():
        if _STATE["target"] in (None, target):
            return
        check_head(target, engine.connect_timeout_s)  # a bad address fails without dropping the working one
        disconnect()
    check_head(target, engine.connect_timeout_s)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    quiet = dict(include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        if target == "local":
            start_local(ray, engine.num_cpus or os.cpu_count() or 1, quiet)
        else:
            with (
                stderr_into(connect_log(target)),
                core_log_level("fatal"),
            ):  # Ray's core warns on stderr while it retries
                ray.init(address=target, **quiet)
    except Exception as e:  # Ray raises ConnectionError, ValueError, RuntimeError...: one line whatever it is
        if target == "local":
            raise EngineError(f"a local Ray cluster could not be started: {first_line(e)}") from None
        raise EngineError(f"Ray cluster {target!r} cannot be reached: {first_line(e)}{log_note(target)}") from None
    if not _STATE["atexit"]:
        atexit.register(disconnect)
        _STATE["atexit"] = True
    _STATE.update(target=target, owned=True, session=_STATE["session"] + 1)


def cluster_cpus(engine) -> int:
    """The CPUs of ``engine``'s cluster (joined, or started, now): how many shards keep it busy."""
    connect(engine)
    return max(1, int(import_ray().cluster_resources().get("CPU", 1)))


# Starts of a local cluster tried when Ray finds two of its components given one port (CI saw our own picks
# repeat, now distinct: free_ports; the retry stays for a clash with a port Ray preselects itself).
LOCAL_START_TRIES = 3
PORT_CLASH = "that is used by other components"  # Ray's message for it (ray._private.parameter)


def start_local(ray, num_cpus: int, quiet: dict) -> None:
    """``ray.init`` of a local cluster, its agents' and metrics ports chosen here, started again (at most
    LOCAL_START_TRIES times) when Ray refuses a port another of its components holds."""
    for attempt in range(1, LOCAL_START_TRIES + 1):
        try:
            with agent_ports_given() as metrics_export_port, own_token():
                ray.init(
                    address="local",
                    num_cpus=num_cpus,
                    object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                    _metrics_export_port=metrics_export_port,
                    **quiet,
                )
            return
        except ValueError as e:
            if PORT_CLASH not in str(e) or attempt == LOCAL_START_TRIES:
                raise
            ray.shutdown()


def free_ports(k: int) -> list[int]:
    """``k`` distinct TCP ports, each free on every interface right now. The sockets stay bound until all
    are picked: picked one at a time, a port just released can be handed out again."""
    socks = [socket.socket() for _ in range(k)]
    try:
        for s in socks:
            s.bind(("", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@contextmanager
def agent_ports_given():
    """Start a local cluster with its agents' ports chosen here. Given no port, the raylet waits for
    each agent to write the one it picked, at most 15 s, and dies past that (ray-project/ray#65983):
    on a busy 2-core machine the agents' imports alone took 20 s. Given the ports, it does not wait.
    Ray's ``init`` has no argument for them, so its parameters get them as they are made, and the
    raylet's command line the one its Python launcher leaves out (the agent's listening port). Yields
    a port for the metrics exporter, distinct from the agents' (:func:`free_ports`)."""
    from ray._private import parameter, services

    *agents, metrics_export = free_ports(len(AGENT_PORTS) + 1)
    ports = dict(zip(AGENT_PORTS, agents))
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
        yield metrics_export
    finally:
        parameter.RayParams.__init__, services.start_ray_process = make_params, start_process


# What a user sets to choose Ray's token authentication: any of them leaves it all to Ray.
AUTH_ENV = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


@contextmanager
def core_log_level(level: str):
    """This process's Ray core (read when it starts: ``ray.init``) logs at ``level`` at least: on a joined
    cluster its error lines (tasks it cannot report, a lost node or head) would reach the user's terminal
    beside our one line. The cluster's own processes keep their logs on their nodes."""
    old = os.environ.get("RAY_BACKEND_LOG_LEVEL")
    os.environ["RAY_BACKEND_LOG_LEVEL"] = old or level  # a user's own setting wins
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("RAY_BACKEND_LOG_LEVEL", None)


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


def check_alive(timeout: float = CONNECT_TIMEOUT_S) -> None:
    """:class:`EngineError` (one line) when the head of the cluster this process joined does not answer
    within ``timeout`` s (one read of its key-value store, bounded even if Ray's client would wait on);
    nothing to check for a cluster started here, or for Ray Client. After a lost head this process
    leaves the cluster without asking it."""
    import threading

    target = _STATE["target"]
    if target in (None, "local") or target.startswith("ray://"):
        return
    import ray

    answer: list = []

    def ask():
        try:
            gcs = ray._private.worker.global_worker.gcs_client
            gcs.internal_kv_get(b"mimirlib", None, timeout=timeout)
            answer.append(None)
        except Exception as e:  # Ray's RpcError, GetTimeoutError...: the cause, in one line
            answer.append(first_line(e))

    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    asker.join(timeout + 1)
    if answer == [None]:
        return
    _STATE["owned"] = False  # ray.shutdown would wait on the lost head
    why = answer[0] if answer else f"no answer within {timeout:g} s"
    raise EngineError(f"the Ray head {target!r} stopped answering during the run ({why})")


def session() -> int:
    """How many connections this process has made: what a worker pool was made on changes with it."""
    return _STATE["session"]


def disconnect() -> None:
    """Leave the cluster if it was started or joined here (a local one stops); a caller's own
    ``ray.init`` connection is left as it is."""
    if _STATE["owned"]:
        import ray

        ray.shutdown()
    _STATE.update(target=None, owned=False)
