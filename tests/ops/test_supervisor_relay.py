"""The supervisor copies its children's log lines to its stdout, chunk by chunk."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys

import pytest

from ninetynine import supervisor


class _CountingStream(io.StringIO):
    writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


async def _relay(name: str, *chunks: bytes) -> tuple[list[str], int]:
    reader = asyncio.StreamReader(limit=supervisor._LINE_LIMIT)
    out = _CountingStream()
    pump = asyncio.create_task(supervisor._pump(name, reader, supervisor._LogWriter(out, pretty=False)))
    for chunk in chunks:
        reader.feed_data(chunk)
        await asyncio.sleep(0)
    reader.feed_eof()
    await pump
    return out.getvalue().splitlines(), out.writes


async def test_a_childs_json_lines_pass_unchanged_and_a_replica_is_named() -> None:
    own = b'{"event":"listening","service":"session-2"}'
    replica = b'{"event":"listening","service":"session"}'
    lines, _ = await _relay("session-2", own + b"\n" + replica + b"\n")
    assert lines[0] == own.decode()
    assert json.loads(lines[1]) == {"event": "listening", "service": "session", "process": "session-2"}


async def test_text_is_prefixed_and_a_line_split_across_reads_is_whole() -> None:
    lines, _ = await _relay("engine", b"Traceback (most", b" recent call last):\n", b"tail without newline")
    assert lines == ["[engine] Traceback (most recent call last):", "[engine] tail without newline"]


async def test_the_lines_of_one_read_go_out_in_one_write() -> None:
    batch = b"".join(b'{"event":"message","n":%d,"service":"gateway"}\n' % i for i in range(100))
    lines, writes = await _relay("gateway", batch)
    assert [json.loads(line)["n"] for line in lines] == list(range(100))
    assert writes == 1


async def test_a_line_over_the_limit_is_dropped_and_the_next_one_kept() -> None:
    huge = b"x" * (supervisor._LINE_LIMIT + 10)
    lines, _ = await _relay("engine", huge[:700_000], huge[700_000:], b"\nnext\n")
    assert lines == ["[engine] (a log line longer than 1 MiB was dropped)", "[engine] next"]


async def test_a_childs_pipe_is_read_in_batches_not_on_every_write() -> None:
    # The child writes 300 lines one write at a time, 1 ms apart; the supervisor, polling its pipe
    # instead of waking for each write, copies them in a few batches (a wake per write: ~300).
    pipe = supervisor._PolledPipe()
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import os, time\n"
        "for i in range(300):\n"
        '    os.write(1, b\'{"event":"message","n":%d,"service":"gateway"}\\n\' % i)\n'
        "    time.sleep(0.001)\n",
        stdout=pipe.write_fd,
    )
    pipe.started()
    out = _CountingStream()
    await supervisor._pump("gateway", pipe, supervisor._LogWriter(out, pretty=False))
    assert await child.wait() == 0
    assert [json.loads(line)["n"] for line in out.getvalue().splitlines()] == list(range(300))
    assert out.writes < 100, out.writes
    assert pipe.read_fd == -1  # closed at the end of the child's output


async def test_a_quiet_childs_pipe_is_not_polled_and_its_next_line_still_arrives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An idle stack's supervisor should cost nothing: polling an empty pipe every tick woke it
    # ten times a second for nothing. The child is quiet for 1 s (ten ticks), then writes.
    reads = 0
    real_read = os.read

    def counting_read(fd: int, n: int) -> bytes:
        nonlocal reads
        reads += 1
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", counting_read)
    pipe = supervisor._PolledPipe()
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        'import os, time\ntime.sleep(1.0)\nos.write(1, b\'{"event":"late","service":"engine"}\\n\')\n',
        stdout=pipe.write_fd,
    )
    pipe.started()
    out = _CountingStream()
    await supervisor._pump("engine", pipe, supervisor._LogWriter(out, pretty=False))
    assert await child.wait() == 0
    assert [json.loads(line)["event"] for line in out.getvalue().splitlines()] == ["late"]
    # Two empty reads before it waits for the child, the line, the end (polling: about twelve).
    assert reads <= 5, reads
