"""A test session as a real subprocess (for crash and multi-replica tests); the launching itself is
:mod:`ninetynine.launch`."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ninetynine.launch import start, wait_serving


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
    proc = start(session_args(port, engine_port, store, scale=scale, bot_ms=bot_ms), log_path)
    wait_serving(port, proc=proc)
    return proc
