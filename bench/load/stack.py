"""The three services as child processes on 127.0.0.1, plus what the load run reads from them.

:class:`Stack` starts ``python -m ninetynine.cli engine|session|gateway`` (the production entry
points, production log level by default) on free loopback ports, with a fresh SQLite store in a
temporary directory, waits until every one is SERVING and stops them (SIGTERM, then SIGKILL after
a bound) on exit; the launching is :mod:`ninetynine.launch`'s. With ``engine_local`` there is no
engine process: the session runs the rules itself (``--engine local``); otherwise the session
sends its moves to the engine's frames socket in the work directory, and the gateway its shared
calls to the session's, as ``ninety-nine serve`` does. :class:`ProcSampler` reads CPU time and
RSS from ``/proc``; :func:`histogram_buckets` parses one Prometheus histogram out of a
``/metrics`` page; :func:`open_files` reads a process's open-files limit and count.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from ninetynine import launch
from ninetynine.launch import free_port

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
HOST = "127.0.0.1"
# The processes of the load run's per-second lines, in their order (no engine with engine_local).
PROCS = ("engine", "session", "gateway", "loadgen")
# Every simulated client connects from 127.0.0.1: lift the gateway's per-address budgets.
LOAD_BUDGETS = (
    "--max-connections-per-address", "1000000",
    "--connections-per-second-per-address", "1000000",
    "--rooms-per-minute-per-address", "1000000",
)  # fmt: skip
_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class StackConfig:
    turn_time_scale: float = 1.0
    bot_think_ms: int = 3000
    log_level: str = "info"
    store: str = "sqlite"  # sqlite[?synchronous=normal] (a fresh file) or a redis:// URL
    heartbeat_seconds: int = 20
    engine_local: bool = False  # the session's --engine local: no engine process at all


@dataclass
class Stack:
    """engine (unless ``engine_local``), session and gateway, started on enter and stopped on exit."""

    config: StackConfig = field(default_factory=StackConfig)
    ports: dict[str, int] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    workdir: str = ""

    @property
    def ws_url(self) -> str:
        return f"ws://{HOST}:{self.ports['gateway']}/ws"

    @property
    def session_metrics_url(self) -> str:
        return f"http://{HOST}:{self.ports['session_metrics']}/metrics"

    def pids(self) -> dict[str, int]:
        return {name: proc.pid for name, proc in self.procs.items()}

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        env = launch.service_env(
            PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
        )
        proc = launch.start(
            [name, "--host", HOST, "--log-level", self.config.log_level, *args],
            Path(self.workdir) / f"{name}.log",
            env=env,
            cwd=REPO_ROOT,
        )
        self.procs[name] = proc
        return proc

    def __enter__(self) -> Stack:
        self.workdir = tempfile.mkdtemp(prefix="ninety-nine-load-")
        cfg = self.config
        names: tuple[str, ...] = ("session", "session_metrics", "gateway", "gateway_grpc", "gateway_metrics")
        if not cfg.engine_local:
            names = ("engine", "engine_metrics", *names)
        self.ports = {name: free_port() for name in names}
        # "sqlite" or "sqlite?synchronous=normal": a fresh file in the work dir; otherwise a Redis URL.
        store = cfg.store
        if store.startswith("sqlite"):
            store = f"sqlite:///{self.workdir}/rooms.db" + store[len("sqlite") :]
        try:
            engine = None
            # As `serve` runs them: the moves go to the engine's socket in the (private) work dir,
            # the gateway's shared calls to the session's.
            frames = [] if cfg.engine_local else ["--engine-frames", f"{self.workdir}/engine.sock"]
            if not cfg.engine_local:
                engine = self._spawn(
                    "engine",
                    ["--port", str(self.ports["engine"]),
                     "--metrics-port", str(self.ports["engine_metrics"]),
                     "--frames-socket", f"{self.workdir}/engine.sock"],
                )  # fmt: skip
            engine_target = "local" if engine is None else f"{HOST}:{self.ports['engine']}"
            session = self._spawn(
                "session",
                [
                    "--port", str(self.ports["session"]),
                    "--metrics-port", str(self.ports["session_metrics"]),
                    "--engine", engine_target,
                    *frames,
                    "--frames-socket", f"{self.workdir}/session.sock",
                    "--store", store,
                    "--bot-think-ms", str(cfg.bot_think_ms),
                    "--turn-time-scale", str(cfg.turn_time_scale),
                ],
            )  # fmt: skip
            gateway = self._spawn(
                "gateway",
                [
                    "--port", str(self.ports["gateway"]),
                    "--grpc-port", str(self.ports["gateway_grpc"]),
                    "--metrics-port", str(self.ports["gateway_metrics"]),
                    "--session", f"{HOST}:{self.ports['session']}",
                    "--session-frames", f"{self.workdir}/session.sock",
                    "--heartbeat-seconds", str(cfg.heartbeat_seconds),
                    *LOAD_BUDGETS,
                ],
            )  # fmt: skip
            if engine is not None:
                launch.wait_serving(self.ports["engine"], timeout=30, proc=engine)
            launch.wait_serving(self.ports["session"], timeout=30, proc=session)
            launch.wait_serving(
                self.ports["gateway_grpc"], http_port=self.ports["gateway"], timeout=30, proc=gateway
            )
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        launch.stop(self.procs.values(), timeout=15)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        # The services' logs and the SQLite file are 100s of MB after a long run: keep them only
        # when the run failed (or when asked), to look at.
        if exc is None and not os.environ.get("NINETYNINE_LOAD_KEEP"):
            shutil.rmtree(self.workdir, ignore_errors=True)
        else:
            print(f"service logs and store kept in {self.workdir}", file=sys.stderr)

    def log_tail(self, name: str, lines: int = 5) -> str:
        try:
            with open(os.path.join(self.workdir, f"{name}.log"), encoding="utf-8", errors="replace") as fh:
                return "".join(fh.readlines()[-lines:])
        except OSError:
            return ""


@dataclass
class ProcSample:
    cpu_s: float
    rss_bytes: int
    at: float


def read_proc(pid: int) -> ProcSample | None:
    """CPU seconds (user+system, all threads) and resident memory of ``pid``; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/statm", encoding="ascii") as fh:
            rss_pages = int(fh.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    # fields[0] is the state (field 3 of stat); utime and stime are fields 14 and 15.
    cpu = (int(fields[11]) + int(fields[12])) / _TICKS
    return ProcSample(cpu, rss_pages * _PAGE, time.monotonic())


def open_files(pid: int) -> tuple[int | None, int | None]:
    """(soft open-files limit, files open now) of ``pid`` from ``/proc``; None where unreadable."""
    limit: int | None = None
    try:
        with open(f"/proc/{pid}/limits", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Max open files"):
                    soft = line.split()[3]
                    limit = None if soft == "unlimited" else int(soft)
    except (OSError, ValueError, IndexError):
        pass
    try:
        count: int | None = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        count = None
    return limit, count


class ProcSampler:
    """CPU % (of one core) and RSS per named process between successive :meth:`sample` calls."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self._last: dict[str, ProcSample] = {}
        for name, pid in pids.items():
            first = read_proc(pid)
            if first is not None:
                self._last[name] = first

    def sample(self) -> dict[str, tuple[float, int]]:
        """``{name: (cpu_percent_since_last_sample, rss_bytes)}``."""
        out: dict[str, tuple[float, int]] = {}
        for name, pid in self.pids.items():
            now = read_proc(pid)
            if now is None:
                continue
            before = self._last.get(name)
            cpu = 0.0
            if before is not None and now.at > before.at:
                cpu = 100.0 * (now.cpu_s - before.cpu_s) / (now.at - before.at)
            self._last[name] = now
            out[name] = (cpu, now.rss_bytes)
        return out


def per_process(values: dict[str, float], names: tuple[str, ...]) -> str:
    """``a/b/c`` of the named processes' values; ``-`` for one that does not run (the engine
    with ``engine_local``), so it is not mistaken for a process using nothing."""
    return "/".join(f"{values[n]:.0f}" if n in values else "-" for n in names)


def histogram_buckets(text: str, name: str, having: str = "") -> list[tuple[float, float]]:
    """``[(upper_bound, cumulative_count), ...]`` of histogram ``name`` (labels summed).

    ``having`` (e.g. ``'stage="durable"'``) keeps only the series whose labels contain it.
    """
    totals: dict[float, float] = {}
    prefix = f"{name}_bucket{{"
    for line in text.splitlines():
        if not line.startswith(prefix) or having not in line:
            continue
        labels, _, value = line.rpartition(" ")
        le = labels.split('le="', 1)[1].split('"', 1)[0]
        bound = float("inf") if le == "+Inf" else float(le)
        totals[bound] = totals.get(bound, 0.0) + float(value)
    return sorted(totals.items())


def bucket_quantile(
    before: list[tuple[float, float]], after: list[tuple[float, float]], q: float
) -> float | None:
    """Upper bound of the bucket holding quantile ``q`` of the observations between two scrapes."""
    old = dict(before)
    delta = [(bound, count - old.get(bound, 0.0)) for bound, count in after]
    if not delta or delta[-1][1] <= 0:
        return None
    target = q * delta[-1][1]
    for bound, cumulative in delta:
        if cumulative >= target:
            return bound
    return delta[-1][0]


def bucket_count(before: list[tuple[float, float]], after: list[tuple[float, float]]) -> int:
    if not after:
        return 0
    return int(after[-1][1] - (before[-1][1] if before else 0.0))
