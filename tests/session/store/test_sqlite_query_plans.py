"""The deadline scheduler's queries run on every commit's wake-up: they must search the partial
index ``rooms_due``, never scan the rooms table (a bare ``MIN(due_at_ms)`` cannot use a partial
index: at 10,000 rooms it cost ~8 ms per call on the store's one worker thread)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from services.session.store.sqlite_store import CLAIM_DUE_SQL, NEXT_DEADLINE_SQL, SqliteRoomStore


@pytest.mark.parametrize("sql", [NEXT_DEADLINE_SQL, CLAIM_DUE_SQL], ids=["next_deadline", "claim_due"])
async def test_scheduler_queries_search_the_deadline_index(tmp_path: Path, sql: str) -> None:
    path = str(tmp_path / "rooms.db")
    store = SqliteRoomStore(path)
    await store.close()  # the schema is there; look at the plans on a connection of our own
    conn = sqlite3.connect(path)
    try:
        params = (0,) * sql.count("?")
        plan = " | ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    finally:
        conn.close()
    assert "INDEX rooms_due" in plan, plan
    assert "SCAN rooms" not in plan, plan
