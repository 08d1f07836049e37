"""``bench.load.deadlines`` at a tiny size against the real engine and session: the rooms' deadlines
are all pending when the window opens, they fire, and all three lateness measures get samples; on
Redis the bench leaves none of its keys behind. No figure is asserted, only that it is measured."""

from __future__ import annotations

import io

import pytest
import redis.asyncio as aioredis

from bench.load.deadlines import DeadlineConfig, fire_lateness, measure, to_json
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

REDIS_URL = "redis://127.0.0.1:6379"
ROOMS = 20


@pytest.mark.parametrize("store", ["sqlite", REDIS_URL])
async def test_tiny_run_fires_every_pending_deadline_and_measures_lateness(store: str) -> None:
    # 20 rooms at 20 deadlines/s: 1 s turns, so each room fires about twice in the 2 s window.
    cfg = DeadlineConfig(rooms=ROOMS, rate=20, duration=2, store=store, watch=5, settle=0.5, quiet=True)
    out = io.StringIO()
    summary = await measure(cfg, out)

    assert summary.setup_errors == 0, out.getvalue()
    assert summary.pending_at_window == ROOMS
    assert summary.playing_end == ROOMS and summary.finished_end == 0
    assert summary.fires > 0 and summary.hist_p99_ms is not None
    assert summary.exact_fires > 0 and summary.exact_p99_ms is not None and summary.exact_p50_ms is not None
    assert summary.exact_p50_ms >= 0  # fired at or after the due time, never before
    assert summary.exact_inconsistent == 0 and summary.exact_other_sources == 0
    assert summary.watched_fires > 0 and summary.watched_p99_ms is not None
    assert len(summary.seconds) == 2
    assert to_json(summary)["rooms"] == ROOMS
    if summary.redis_prefix:
        client = aioredis.from_url(REDIS_URL)
        try:
            assert [key async for key in client.scan_iter(match=f"{summary.redis_prefix}*")] == []
        finally:
            await client.aclose()


def test_lateness_is_reconstructed_from_turn_starts() -> None:
    doc = doc_pb.RoomDocument(phase=pb.ROOM_PHASE_PLAYING, started_at_ms=1000)
    for at_ms in (2005, 3010, 4010):
        doc.moves.add(player_id="p", source="timeout", at_ms=at_ms)
    doc.deadline_ms, doc.turn_started_at_ms = 5010, 4010
    late, consistent, others = fire_lateness(doc, 1000, 2500, 5000)
    assert (late, consistent, others) == (
        [(3010, 5), (4010, 0)],
        True,
        0,
    )  # 3010 - (2005 + 1000), 4010 - (3010 + 1000)
    doc.deadline_ms = 5011  # a turn the reconstruction would get wrong
    assert fire_lateness(doc, 1000, 0, 10_000)[1] is False
