"""The store's hot queries must search an index, never scan the rooms table or sort it.

The deadline scheduler's run on every commit's wake-up: they search the partial index ``rooms_due``
(a bare ``MIN(due_at_ms)`` cannot use a partial index: at 10,000 rooms it cost ~8 ms per call on the
store's one worker thread). A lobby listing reads each phase backwards on ``rooms_by_phase`` and the
expiry sweep reads ``rooms_idle``: with a week of finished games kept, a scan or a sort would read
every one of them on the same thread.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ninetynine.session.store.sqlite_store import (
    _ROOM_COLUMNS,
    CLAIM_DUE_SQL,
    IDLE_ROOMS_SQL,
    LIST_PHASE_SQL,
    NEXT_DEADLINE_SQL,
    SqliteRoomStore,
)


@pytest.mark.parametrize(
    ("sql", "index", "sorted_by_index"),
    [
        (NEXT_DEADLINE_SQL, "rooms_due", True),
        # Sorts only the rooms due in the same millisecond by id.
        (CLAIM_DUE_SQL, "rooms_due", False),
        (LIST_PHASE_SQL.format(columns=_ROOM_COLUMNS), "rooms_by_phase", True),
        (IDLE_ROOMS_SQL.format(columns=_ROOM_COLUMNS), "rooms_idle", True),
    ],
    ids=["next_deadline", "claim_due", "list_phase", "idle_rooms"],
)
async def test_store_queries_search_their_index(
    tmp_path: Path, sql: str, index: str, sorted_by_index: bool
) -> None:
    path = str(tmp_path / "rooms.db")
    store = SqliteRoomStore(path)
    await store.close()  # the schema is there; look at the plans on a connection of our own
    conn = sqlite3.connect(path)
    try:
        params = (0,) * sql.count("?")
        plan = " | ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    finally:
        conn.close()
    assert f"INDEX {index} " in plan, plan
    assert "SCAN rooms" not in plan, plan
    if sorted_by_index:
        assert "TEMP B-TREE" not in plan, plan
