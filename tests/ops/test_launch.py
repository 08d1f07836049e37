"""ninetynine.launch: what serve, the load bench and the tests rely on when they run service children."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ninetynine import launch
from ninetynine.common.credential import TOKEN_ENV
from ninetynine.supervisor import ENGINE_SERVICE

pytestmark = pytest.mark.timeout(120)

# Ignores SIGTERM, says so, then sleeps: a child that will not stop on request.
STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
    "time.sleep(120)"
)


def test_free_ports_are_distinct_and_below_the_ephemeral_range() -> None:
    """An outgoing connection takes its source port from the ephemeral range; a port chosen there
    could be taken before the child binds it. No port is handed out twice either."""
    first_ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [launch.free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    assert all(10_000 <= p < first_ephemeral for p in ports)
    for port in ports[:20]:  # and each can be listened on
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))
            sock.listen()


def test_a_service_that_exits_while_starting_fails_the_wait_instead_of_timing_out(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        log = tmp_path / "engine.log"
        proc = launch.start(["engine", "--host=127.0.0.1", f"--port={port}", "--metrics-port=0"], log)
        with pytest.raises(RuntimeError, match="exited with 1"):
            launch.wait_serving(port, proc=proc, timeout=100)
    assert "engine failed to start" in log.read_text()


def test_a_started_engine_reports_serving_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    engine_port = launch.free_port()
    engine = launch.start(["engine", "--host=127.0.0.1", f"--port={engine_port}"], tmp_path / "engine.log")
    try:
        assert launch.wait_serving(engine_port, service=ENGINE_SERVICE, proc=engine)
        # Stopped on request: SIGTERM is enough, the exit is clean.
        assert launch.stop([engine], timeout=30) == [0]
    finally:
        launch.stop([engine], timeout=5)


def test_a_child_that_ignores_sigterm_is_killed_after_the_bound() -> None:
    proc = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    assert launch.stop([proc], timeout=0.5) == [-signal.SIGKILL]


def test_a_child_gets_the_credential_it_is_given_and_not_the_inherited_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "inherited-secret-0123456789")
    monkeypatch.setenv("NINETYNINE_SERVICE_TOKEN_FILE", "/somewhere/token")
    assert launch.service_env()[TOKEN_ENV] == "inherited-secret-0123456789"
    own = launch.service_env("per-run-secret-0123456789", own_credential=True)
    assert own[TOKEN_ENV] == "per-run-secret-0123456789"
    assert "NINETYNINE_SERVICE_TOKEN_FILE" not in own
    assert TOKEN_ENV not in launch.service_env(own_credential=True)
