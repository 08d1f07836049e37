"""configure_logging: JSON lines with service/timestamp/context, stdlib routed, idempotent."""

from __future__ import annotations

import asyncio
import io
import json
import logging

import pytest
import structlog

from ninetynine.common.context import request_scope
from ninetynine.common.logging import configure_logging, emit_line, get_logger
from tests.common.conftest import LogCapture


@pytest.fixture(autouse=True)
def _restore_default_logging():
    yield
    structlog.contextvars.clear_contextvars()
    configure_logging("probe", json_logs=True)


def test_json_line_has_timestamp_level_service_logger_and_context() -> None:
    capture = LogCapture()
    configure_logging("engine", json_logs=True, stream=capture)  # type: ignore[arg-type]
    structlog.contextvars.bind_contextvars(request_id="r-1")
    get_logger("ninetynine.engine.app").info("listening", port=50051, text="손에 없는 카드예요")
    (line,) = capture.lines
    assert line["event"] == "listening" and line["port"] == 50051
    assert (line["service"], line["level"], line["logger"]) == ("engine", "info", "ninetynine.engine.app")
    assert line["request_id"] == "r-1"
    assert line["timestamp"].endswith("Z") and "T" in line["timestamp"]
    assert line["text"] == "손에 없는 카드예요"


def test_stdlib_records_use_the_same_format() -> None:
    capture = LogCapture()
    configure_logging("session", json_logs=True, stream=capture)  # type: ignore[arg-type]
    logging.getLogger("aiohttp.access").warning("slow request %s", "/ws")
    (line,) = capture.lines
    assert line["event"] == "slow request /ws"
    assert (line["service"], line["level"], line["logger"]) == ("session", "warning", "aiohttp.access")


def test_calling_twice_does_not_duplicate_lines_and_applies_the_new_settings() -> None:
    first, second = LogCapture(), LogCapture()
    log = get_logger("twice")
    configure_logging("one", json_logs=True, stream=first)  # type: ignore[arg-type]
    log.info("a")
    configure_logging("two", level="warning", json_logs=True, stream=second)  # type: ignore[arg-type]
    log.info("dropped by level")
    log.warning("b")
    logging.getLogger("grpc").warning("c")
    assert [line["event"] for line in first.lines] == ["a"]
    assert [(line["event"], line["service"]) for line in second.lines] == [("b", "two"), ("c", "two")]


def test_console_format_when_not_json() -> None:
    stream = io.StringIO()
    configure_logging("gateway", json_logs=False, stream=stream)
    get_logger("x").info("hello", room="r1")
    text = stream.getvalue()
    assert "hello" in text and "room=r1" in text and "service=gateway" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


def test_json_is_the_default_when_not_a_terminal() -> None:
    stream = io.StringIO()  # isatty() is False
    configure_logging("gateway", stream=stream)
    get_logger().info("hello")
    assert json.loads(stream.getvalue())["event"] == "hello"


def test_exceptions_render_without_local_variables() -> None:
    capture = LogCapture()
    configure_logging("engine", json_logs=True, stream=capture)  # type: ignore[arg-type]
    secret = "hunter2"  # noqa: F841 - must not appear in the output
    try:
        raise ValueError("bad")
    except ValueError:
        get_logger().exception("failed")
    (line,) = capture.lines
    assert line["exception"][0]["exc_type"] == "ValueError"
    assert "hunter2" not in json.dumps(line)


def test_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        configure_logging("engine", level="loud")


def test_emit_line_writes_what_the_structlog_path_writes() -> None:
    """The canonical line's fast path: same keys in the same order, same values, same JSON layout."""
    capture = LogCapture()
    configure_logging("engine", json_logs=True, stream=capture)  # type: ignore[arg-type]
    fields: dict[str, object] = {"mode": "kr-product", "seq": 7, "reason": "카드가 없어요", "big": 2**70}
    with request_scope("req-9", method="/x.v1.S/M"):
        structlog.contextvars.bind_contextvars(room_id="r1")
        get_logger("engine.rpc").info("rpc", **fields, code="OK")
        emit_line("engine.rpc", "info", "rpc", {**fields, "code": "OK"})
        emit_line("engine.rpc", "debug", "rpc", {"dropped": True})  # below the level: nothing
    slow, fast = capture.lines
    assert slow.pop("timestamp")[:10] == fast.pop("timestamp")[:10]
    assert list(fast.items()) == list(slow.items())
    assert fast["request_id"] == "req-9" and fast["method"] == "/x.v1.S/M" and fast["room_id"] == "r1"
    assert fast["big"] == 2**70  # beyond orjson's 64 bits: still a number


class _CountingStream(io.StringIO):
    """A stream that counts its writes (each one a system call on a real pipe)."""

    writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


async def test_lines_of_one_loop_turn_reach_the_stream_in_one_write() -> None:
    stream = _CountingStream()
    configure_logging("gateway", json_logs=True, stream=stream)
    for i in range(50):
        emit_line("gateway.messages", "info", "message", {"type": "play", "n": i})
    get_logger("gateway.app").info("structlog path too")
    assert stream.getvalue() == "", "held until the turn ends"
    await asyncio.sleep(0)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line.get("n") for line in lines] == [*range(50), None]
    assert stream.writes == 1


async def test_warnings_and_errors_are_written_at_once() -> None:
    stream = _CountingStream()
    configure_logging("session", json_logs=True, stream=stream)
    emit_line("session.app", "info", "before", {})
    emit_line("session.app", "error", "store unreachable", {})
    assert [json.loads(line)["event"] for line in stream.getvalue().splitlines()] == [
        "before",
        "store unreachable",
    ]
    get_logger("session.app").warning("slow commit")
    assert json.loads(stream.getvalue().splitlines()[-1])["event"] == "slow commit"


def test_outside_a_loop_a_line_is_written_at_once() -> None:
    stream = _CountingStream()
    configure_logging("engine", json_logs=True, stream=stream)
    emit_line("engine.app", "info", "listening", {"port": 1})
    get_logger("engine.app").info("ready")
    assert [json.loads(line)["event"] for line in stream.getvalue().splitlines()] == ["listening", "ready"]
