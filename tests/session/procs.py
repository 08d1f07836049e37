"""Helpers to run services as real subprocesses (for crash and multi-replica tests)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_serving(port: int, timeout: float = 20.0) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            try:
                reply = health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(), timeout=0.5
                )
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
        time.sleep(0.1)
    raise TimeoutError(f"nothing SERVING on port {port}")


def start_service(args: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    log = log_path.open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "services.cli", *args], stdout=log, stderr=subprocess.STDOUT, env=env
    )


def session_args(port: int, engine_port: int, store: str, *, scale: float, bot_ms: int) -> list[str]:
    """``ninety-nine session`` arguments for a test session on 127.0.0.1 with fast clocks."""
    return [
        "session",
        "--host=127.0.0.1",
        f"--port={port}",
        f"--engine=127.0.0.1:{engine_port}",
        f"--store={store}",
        "--metrics-port=0",
        f"--turn-time-scale={scale}",
        f"--bot-think-ms={bot_ms}",
    ]


def start_session(
    port: int, engine_port: int, store: str, log_path: Path, *, scale: float = 0.01, bot_ms: int = 5
) -> subprocess.Popen[bytes]:
    proc = start_service(session_args(port, engine_port, store, scale=scale, bot_ms=bot_ms), log_path)
    wait_serving(port)
    return proc
