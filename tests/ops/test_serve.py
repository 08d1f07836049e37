"""``ninety-nine serve`` end to end: real child processes, real ports, a game, a clean stop, no orphans."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import grpc.aio
import pytest

from ninetynine.common.credential import bearer_metadata
from ninetynine.gateway.server import STATIC_DIR
from ninetynine.session.v1 import session_service_pb2 as spb
from ninetynine.session.v1 import session_service_pb2_grpc as spb_grpc
from tests.ops.stack import (
    Serve,
    children_of,
    delete_redis_keys,
    open_table,
    pid_alive,
    redis_store_url,
    wait_gone,
)

pytestmark = pytest.mark.timeout(120)

FAST_GAME = ("--bot-think-ms=20", "--turn-time-scale=0.05")


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[Serve]]:
    """Every Serve a test starts; whatever is still running at the end is killed."""
    running: list[Serve] = []
    yield running
    for serve in running:
        if serve.proc.poll() is None:
            serve.kill()


def flag(args: tuple[str, ...], name: str) -> str:
    """The value given to ``name`` in a child's command line."""
    return args[args.index(name) + 1]


def stop_order(serve: Serve) -> list[str]:
    return [
        str(r["process"])
        for r in serve.json_lines()
        if r.get("service") == "supervisor" and r.get("event") == "stopped"
    ]


async def check_urls_answer(serve: Serve, expected_metrics: set[str]) -> None:
    metrics = serve.metrics_urls()
    assert set(metrics) == expected_metrics, serve.output()
    async with aiohttp.ClientSession() as http:
        async with http.get(serve.web_url) as response:
            assert response.status == 200
            page = await response.text()
        if (STATIC_DIR / "index.html").is_file():
            assert "<html" in page.lower()
        async with http.get(serve.web_url + "healthz") as response:
            assert response.status == 200
            assert (await response.json())["status"] == "ok"
        for name, url in metrics.items():
            async with http.get(url) as response:
                assert response.status == 200, url
                service = name.split("-")[0]
                assert f"ninetynine_{service}_" in await response.text(), f"{url} shows no {service} metrics"


async def test_serve_sqlite_plays_and_stops_cleanly(tmp_path: Path, started: list[Serve]) -> None:
    serve = Serve.start(*FAST_GAME, cwd=tmp_path)
    started.append(serve)
    serve.wait_ready()

    # The default store is SQLite under ./data of the directory it was started in.
    db = tmp_path / "data" / "rooms.db"
    assert serve.banner_value("store") == f"sqlite:///{db}"
    assert serve.web_url.startswith("http://127.0.0.1:")
    await check_urls_answer(serve, {"engine", "session", "gateway"})

    async with aiohttp.ClientSession() as http:
        table = await open_table(http, serve.web_url)
        room_id = await table.create_room_with_bots(2)
        played, over = await table.play_moves(3)
        assert played == 3 or over, table.seen
        await table.ws.close()
    assert room_id

    pids = serve.child_pids()
    assert set(pids) == {"engine", "session", "gateway"}
    assert all(pid_alive(pid) for pid in pids.values())
    assert sorted(children_of(serve.proc.pid)) == sorted(pids.values())

    assert serve.terminate() == 0, serve.output()
    assert wait_gone(list(pids.values())) == [], "a service outlived the supervisor"
    assert stop_order(serve) == ["gateway", "session", "engine"]
    assert db.is_file() and db.stat().st_size > 0


async def test_serve_with_the_engine_local_runs_two_processes_and_plays(
    tmp_path: Path, started: list[Serve]
) -> None:
    """``--engine-mode local``: no engine process; each session runs the rules itself."""
    serve = Serve.start("--engine-mode=local", *FAST_GAME, cwd=tmp_path)
    started.append(serve)
    serve.wait_ready()
    await check_urls_answer(serve, {"session", "gateway"})

    async with aiohttp.ClientSession() as http:
        table = await open_table(http, serve.web_url)
        await table.create_room_with_bots(2)
        played, over = await table.play_moves(3)
        assert played == 3 or over, table.seen
        await table.ws.close()

    pids = serve.child_pids()
    assert set(pids) == {"session", "gateway"}
    session_lines = [r for r in serve.json_lines() if r.get("service") == "session"]
    assert any(r.get("engine_mode") == "local" for r in session_lines), serve.output()
    assert serve.terminate() == 0, serve.output()
    assert wait_gone(list(pids.values())) == []
    assert stop_order(serve) == ["gateway", "session"]


async def test_serve_redis_two_session_replicas_share_rooms(tmp_path: Path, started: list[Serve]) -> None:
    store, prefix = redis_store_url()
    try:
        serve = Serve.start(f"--store={store}", "--session-replicas=2", *FAST_GAME, cwd=tmp_path)
        started.append(serve)
        serve.wait_ready()
        assert serve.banner_value("store") == "redis://127.0.0.1:6379/0"
        assert prefix not in serve.output().split("ninety-nine is running.")[1], "store options printed"
        await check_urls_answer(serve, {"engine", "session", "session-2", "gateway"})

        async with aiohttp.ClientSession() as http:
            table = await open_table(http, serve.web_url)
            room_id = await table.create_room_with_bots(2)
            # The room made through the gateway is served by the second replica as well.
            async with grpc.aio.insecure_channel(serve.banner_value("grpc session-2")) as channel:
                reply = await spb_grpc.SessionServiceStub(channel).GetRoom(
                    spb.GetRoomRequest(room_id=room_id),
                    timeout=5,
                    metadata=bearer_metadata(serve.service_token()),
                )
            assert reply.room.room_id == room_id
            assert len(reply.room.seats) == 3
            played, over = await table.play_moves(2)
            assert played == 2 or over, table.seen
            await table.ws.close()

        pids = serve.child_pids()
        assert set(pids) == {"engine", "session", "session-2", "gateway"}
        assert serve.terminate() == 0, serve.output()
        assert wait_gone(list(pids.values())) == []
        assert stop_order(serve)[0] == "gateway" and stop_order(serve)[-1] == "engine"
        assert set(stop_order(serve)[1:3]) == {"session", "session-2"}
    finally:
        delete_redis_keys(prefix)


def test_serve_refuses_several_replicas_on_sqlite(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ninetynine.cli", "serve", "--session-replicas=2", "--log-format=json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "redis://" in result.stdout and "SQLite" in result.stdout
    assert "started" not in result.stdout  # no child was started
    assert not (tmp_path / "data").exists()


async def test_a_crashed_service_stops_the_stack(tmp_path: Path, started: list[Serve]) -> None:
    serve = Serve.start(*FAST_GAME, cwd=tmp_path)
    started.append(serve)
    serve.wait_ready()
    pids = serve.child_pids()

    os.kill(pids["session"], signal.SIGKILL)

    assert serve.proc.wait(30) == 1
    assert wait_gone(list(pids.values())) == []
    errors = [r for r in serve.json_lines() if r.get("event") == "service exited unexpectedly"]
    assert errors and errors[0]["process"] == "session" and errors[0]["code"] == -signal.SIGKILL
    assert stop_order(serve) == ["gateway", "engine"]


async def test_children_die_with_a_killed_supervisor(tmp_path: Path, started: list[Serve]) -> None:
    serve = Serve.start(cwd=tmp_path)
    started.append(serve)
    serve.wait_ready()
    pids = serve.child_pids()
    assert len(pids) == 3

    serve.proc.kill()  # SIGKILL: the supervisor cannot clean up; the kernel tells the children
    serve.proc.wait(10)

    assert wait_gone(list(pids.values()), timeout=20) == [], "orphaned services"


def test_default_ports_with_two_replicas_step_around_the_gateway() -> None:
    from ninetynine.cli import build_parser
    from ninetynine.supervisor import build_plan

    args = build_parser().parse_args(
        ["serve", "--store=redis://127.0.0.1:6379/0", "--session-replicas=2", "--host=0.0.0.0"]
    )
    plan = build_plan(args)
    assert plan.engine is not None
    # 50053 is the gateway's gRPC port, so the second replica takes 50054; the first three
    # metrics ports are those of deploy/prometheus/prometheus.yml.
    assert [s.grpc_port for s in plan.sessions] == [50052, 50054]
    assert (plan.engine.grpc_port, plan.gateway.grpc_port, plan.gateway.http_port) == (50051, 50053, 8080)
    assert [c.metrics_port for c in (plan.engine, *plan.sessions, plan.gateway)] == [9101, 9102, 9104, 9103]
    assert plan.web_url == "http://127.0.0.1:8080/"
    # The gateway is given both replicas (gRPC fails over to the second when the first is down).
    assert plan.gateway_session_target == "ipv4:127.0.0.1:50052,127.0.0.1:50054"


def test_host_binds_the_gateway_only_and_the_internal_hosts_are_separate() -> None:
    from ninetynine.cli import build_parser
    from ninetynine.supervisor import build_plan

    plan = build_plan(build_parser().parse_args(["serve", "--host=0.0.0.0"]))
    assert plan.engine is not None
    assert flag(plan.gateway.args, "--host") == "0.0.0.0"
    for child in plan.children():
        assert flag(child.args, "--metrics-host") == "127.0.0.1", child.name
        assert "--no-reflection" in child.args, child.name
    for child in (plan.engine, *plan.sessions):
        assert flag(child.args, "--host") == "127.0.0.1", child.name
    assert "listens gateway:  grpc 0.0.0.0:50053, http 0.0.0.0:8080, metrics 127.0.0.1:9103" in plan.banner()

    plan = build_plan(
        build_parser().parse_args(["serve", "--internal-host=0.0.0.0", "--metrics-host=0.0.0.0"])
    )
    assert plan.engine is not None
    assert flag(plan.gateway.args, "--host") == "127.0.0.1"
    assert {flag(c.args, "--host") for c in (plan.engine, *plan.sessions)} == {"0.0.0.0"}
    assert {flag(c.args, "--metrics-host") for c in plan.children()} == {"0.0.0.0"}
    # Local clients (and the supervisor's health checks) still reach them on loopback.
    assert plan.gateway_session_target == "127.0.0.1:50052"


def test_the_sessions_send_their_moves_to_the_engines_frames_socket_in_the_runtime_dir() -> None:
    from ninetynine.cli import build_parser
    from ninetynine.supervisor import build_plan

    args = build_parser().parse_args(["serve", "--store=redis://127.0.0.1:6379/0", "--session-replicas=2"])
    plan = build_plan(args, "/run/private")
    assert plan.engine is not None
    assert flag(plan.engine.args, "--frames-socket") == "/run/private/engine.sock"
    assert [flag(s.args, "--engine-frames") for s in plan.sessions] == ["/run/private/engine.sock"] * 2
    assert "listens engine:   grpc 127.0.0.1:50051, frames /run/private/engine.sock, metrics" in plan.banner()
    # Two replicas: the gateway's shared calls stay on gRPC, spread over both and failing over.
    assert all("--frames-socket" not in s.args for s in plan.sessions)
    assert "--session-frames" not in plan.gateway.args
    # Without a runtime directory, everything goes over gRPC.
    plain = build_plan(args)
    assert all(
        not {"--frames-socket", "--engine-frames", "--session-frames"} & set(c.args) for c in plain.children()
    )


def test_with_the_engine_local_the_plan_has_no_engine_and_keeps_the_other_ports() -> None:
    from ninetynine.cli import build_parser
    from ninetynine.supervisor import build_plan

    plan = build_plan(build_parser().parse_args(["serve", "--engine-mode=local"]), "/run/private")
    assert plan.engine is None
    assert [child.name for child in plan.children()] == ["session", "gateway"]
    (session,) = plan.sessions
    assert flag(session.args, "--engine") == "local"
    assert "--engine-frames" not in session.args
    # The ports are those of the default stack, the engine's left unused.
    assert (session.grpc_port, session.metrics_port, plan.gateway.metrics_port) == (50052, 9102, 9103)
    assert "engine" not in plan.banner()


def test_with_one_session_the_gateway_opens_its_shared_calls_on_the_sessions_frames_socket() -> None:
    from ninetynine.cli import build_parser
    from ninetynine.supervisor import build_plan

    plan = build_plan(build_parser().parse_args(["serve"]), "/run/private")
    (session,) = plan.sessions
    assert flag(session.args, "--frames-socket") == "/run/private/session.sock"
    assert flag(plan.gateway.args, "--session-frames") == "/run/private/session.sock"
    assert "frames /run/private/session.sock" in plan.banner()


def test_serve_removes_the_runtime_directories_of_stacks_killed_before_they_cleaned_up() -> None:
    import socket
    import tempfile

    from ninetynine import supervisor

    stale = Path(tempfile.mkdtemp(prefix=supervisor.RUNTIME_PREFIX))
    starting = Path(tempfile.mkdtemp(prefix=supervisor.RUNTIME_PREFIX))
    live = Path(tempfile.mkdtemp(prefix=supervisor.RUNTIME_PREFIX))
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        # A killed stack's socket file that nobody listens on any more, and a running stack's.
        dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        dead.bind(str(stale / "engine.sock"))
        dead.close()
        listening.bind(str(live / "engine.sock"))
        listening.listen()
        long_ago = time.time() - supervisor.STALE_AFTER_S - 60
        for directory in (stale, live):
            os.utime(directory, (long_ago, long_ago))
        supervisor._remove_stale_runtime_dirs()
        assert not stale.exists()
        assert (live / "engine.sock").is_socket()
        assert starting.is_dir(), "a stack still starting (no socket yet) keeps its directory"
    finally:
        listening.close()
        for directory in (stale, starting, live):
            shutil.rmtree(directory, ignore_errors=True)
