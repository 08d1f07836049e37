"""The load run's stack with and without an engine process (``--engine-local``), started for real."""

from __future__ import annotations

import json
import time

import pytest

from bench.load.stack import PROCS, Stack, StackConfig, per_process


def _listening_line(stack: Stack) -> dict[str, object]:
    # The session logs the line just after its port answers, which is what the stack waits for:
    # on a busy machine the line may land a moment after the stack is up.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for raw in stack.log_tail("session", lines=50).splitlines():
            if raw.startswith("{"):
                line = json.loads(raw)
                if line.get("event") == "session listening":
                    return dict(line)
        time.sleep(0.05)
    raise AssertionError(f"no 'session listening' line in:\n{stack.log_tail('session', lines=50)}")


@pytest.mark.parametrize(("engine_local", "mode"), [(False, "remote"), (True, "local")])
def test_the_stack_starts_an_engine_process_only_when_the_session_needs_one(
    engine_local: bool, mode: str
) -> None:
    with Stack(StackConfig(engine_local=engine_local)) as stack:
        names = set(stack.pids())
        listening = _listening_line(stack)
    assert names == ({"session", "gateway"} if engine_local else {"engine", "session", "gateway"})
    # The session says at startup which engine answers its rules.
    assert listening["engine_mode"] == mode
    assert (listening["engine"] == "local") is engine_local


def test_a_process_that_does_not_run_shows_as_a_dash_not_as_zero() -> None:
    assert per_process({"session": 41.6, "gateway": 0.0, "loadgen": 12.2}, PROCS) == "-/42/0/12"
