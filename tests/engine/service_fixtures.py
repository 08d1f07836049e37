"""A real engine server for the tests: ``ninety-nine engine --port 0`` in a subprocess.

The process is what production runs (same command, signal handling, JSON logs). Its log goes
to a file the tests can read (canonical ``rpc`` lines); the chosen ports come from its
``engine listening`` line; counters are read from its ``/metrics`` endpoint.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.rpc import error_details_pb2
from prometheus_client.parser import text_string_to_metric_families

from ninetynine import launch
from tests.common import errorinfo

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class RunningEngine:
    process: subprocess.Popen[bytes]
    port: int
    metrics_port: int
    log_path: Path
    _log_offset: int = field(default=0)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def metric(self, name: str, **labels: str) -> float:
        """Current value of one sample on the server's /metrics (0 when absent)."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and sample.labels == labels:
                    return float(sample.value)
        return 0.0

    def log_lines(self) -> list[dict[str, Any]]:
        lines = []
        for raw in self.log_path.read_text(encoding="utf-8").splitlines():
            if raw.startswith("{"):
                lines.append(json.loads(raw))
        return lines


def start_engine(tmp_dir: Path, *extra: str) -> RunningEngine:
    log_path = tmp_dir / f"engine-{time.monotonic_ns()}.log"
    args = ["engine", "--host", "127.0.0.1", "--port", "0", "--metrics-port", "0", *extra]
    process = launch.start(args, log_path, cwd=ROOT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for raw in log_path.read_text(encoding="utf-8").splitlines():
            if raw.startswith("{") and json.loads(raw).get("event") == "engine listening":
                line = json.loads(raw)
                return RunningEngine(process, int(line["port"]), int(line["metrics_port"]), log_path)
        if process.poll() is not None:
            raise RuntimeError(f"engine exited with {process.returncode}: {log_path.read_text()}")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"engine did not start: {log_path.read_text()}")


def stop_engine(engine: RunningEngine) -> int:
    return launch.stop([engine.process], timeout=15)[0]


def run_engine(tmp_dir: Path) -> Iterator[RunningEngine]:
    engine = start_engine(tmp_dir)
    try:
        yield engine
    finally:
        stop_engine(engine)


def only_error_info(err: grpc.RpcError) -> error_details_pb2.ErrorInfo:
    """The one ErrorInfo of a failed engine call (fails the test if there is none or more than one)."""
    return errorinfo.only_error_info(err, ("engine.ninetynine",))
