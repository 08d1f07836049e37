"""The RoomStore contract, run unchanged against SQLite and Redis (see conftest ``backend``)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncGenerator

import pytest
import redis.asyncio as aioredis

from ninetynine.session.store import (
    InvalidStoreInput,
    RoomAlreadyExists,
    RoomNotFound,
    RoomRecord,
    RoomStore,
    StoredEvent,
    StoreUnavailable,
    VersionConflict,
)
from ninetynine.session.store.base import LISTED_PHASES, list_key

from .conftest import REDIS_URL, Backend


def room(
    room_id: str = "room-1",
    *,
    version: int = 1,
    phase: str = "lobby",
    created_at_ms: int = 1_700_000_000_000,
    deadline_ms: int | None = None,
    data: bytes = b"\x00state\xff",
    seats_taken: int = 1,
) -> RoomRecord:
    return RoomRecord(
        room_id=room_id,
        version=version,
        phase=phase,
        mode="kr-product",
        seats_total=4,
        seats_taken=seats_taken,
        created_at_ms=created_at_ms,
        updated_at_ms=created_at_ms + version,
        data=data,
        deadline_ms=deadline_ms,
    )


def event(
    seq: int, payload: bytes | None = None, *, audience: str = "all", player_id: str = ""
) -> StoredEvent:
    return StoredEvent(seq, audience, player_id, payload if payload is not None else f"e{seq}".encode())


def bump(record: RoomRecord, **changes: object) -> RoomRecord:
    """The next version of ``record`` with ``changes`` applied."""
    fields = {**record.__dict__, "version": record.version + 1, **changes}
    return RoomRecord(**fields)  # type: ignore[arg-type]


async def commit_events(store: RoomStore, record: RoomRecord, first_seq: int, count: int) -> RoomRecord:
    new = bump(record)
    await store.commit(
        record.room_id, record.version, new, [event(s) for s in range(first_seq, first_seq + count)]
    )
    return new


# --- create / load / commit ---------------------------------------------------------------------------


async def test_create_then_load_returns_the_same_record(store: RoomStore) -> None:
    record = room(deadline_ms=1_700_000_030_000, data=bytes(range(256)))
    await store.create_room(record)
    assert await store.load_room("room-1") == record
    assert await store.load_room("other") is None


async def test_create_refuses_an_existing_room_and_keeps_the_original(store: RoomStore) -> None:
    original = room(data=b"first")
    await store.create_room(original)
    with pytest.raises(RoomAlreadyExists):
        await store.create_room(room(data=b"second", phase="playing"))
    assert await store.load_room("room-1") == original


async def test_create_with_initial_events(store: RoomStore) -> None:
    await store.create_room(room(), [event(1), event(2, audience="only", player_id="p1")])
    assert await store.read_events("room-1", 0) == [event(1), event(2, audience="only", player_id="p1")]
    with pytest.raises(InvalidStoreInput):
        await store.create_room(room("room-2"), [event(2)])
    assert await store.load_room("room-2") is None


async def test_commit_replaces_record_and_appends_events(store: RoomStore) -> None:
    first = room()
    await store.create_room(first)
    second = bump(first, phase="playing", data=b"v2", deadline_ms=1_700_000_050_000, seats_taken=3)
    events = [
        event(1),
        event(2, audience="except", player_id="p2"),
        event(3, audience="only", player_id="p2"),
    ]
    await store.commit("room-1", 1, second, events)
    assert await store.load_room("room-1") == second
    assert await store.read_events("room-1", 0) == events


async def test_commit_with_a_stale_version_conflicts_and_writes_nothing(store: RoomStore) -> None:
    first = room()
    await store.create_room(first, [event(1)])
    second = await commit_events(store, first, 2, 1)
    stale = bump(first, data=b"stale", deadline_ms=123)
    with pytest.raises(VersionConflict) as raised:
        await store.commit("room-1", 1, stale, [event(3, b"stale")])
    assert raised.value.actual_version == 2
    assert await store.load_room("room-1") == second
    assert await store.read_events("room-1", 0) == [event(1), event(2)]
    assert await store.next_deadline_ms() is None


async def test_commit_refuses_bad_input_without_writing(store: RoomStore) -> None:
    first = room()
    await store.create_room(first, [event(1)])
    with pytest.raises(RoomNotFound):
        await store.commit("nope", 1, bump(room("nope")), [])
    with pytest.raises(InvalidStoreInput):  # version must be expected + 1
        await store.commit("room-1", 1, bump(first, version=5), [])
    with pytest.raises(InvalidStoreInput):  # the record is for another room
        await store.commit("room-1", 1, bump(room("room-2")), [])
    with pytest.raises(InvalidStoreInput):  # seq must continue the log: 2, not 3
        await store.commit("room-1", 1, bump(first, data=b"gap"), [event(3)])
    with pytest.raises(InvalidStoreInput):  # seqs inside one commit must be contiguous
        await store.commit("room-1", 1, bump(first), [event(2), event(4)])
    with pytest.raises(InvalidStoreInput):
        await store.commit("room-1", 1, bump(first, phase="paused"), [])
    with pytest.raises(InvalidStoreInput):
        await store.commit("room-1", 1, bump(first), [event(2, audience="only")])
    with pytest.raises(InvalidStoreInput):
        await store.commit("room-1", 1, bump(first, created_at_ms=5), [])
    assert await store.load_room("room-1") == first
    assert await store.read_events("room-1", 0) == [event(1)]


async def test_room_ids_are_validated(store: RoomStore) -> None:
    with pytest.raises(InvalidStoreInput):
        await store.create_room(room("has space"))
    with pytest.raises(InvalidStoreInput):
        await store.load_room("../etc")
    with pytest.raises(InvalidStoreInput):
        await store.load_room("")


@pytest.mark.parametrize("across_instances", [False, True])
async def test_concurrent_commits_on_one_version_exactly_one_wins(
    backend: Backend, across_instances: bool
) -> None:
    writer_a = backend.open()
    writer_b = backend.open() if across_instances else writer_a
    current = room()
    await writer_a.create_room(current)
    next_seq = 1
    for round_no in range(25):
        candidate_a = bump(current, data=f"a{round_no}".encode())
        candidate_b = bump(current, data=f"b{round_no}".encode())
        outcomes = await asyncio.gather(
            writer_a.commit(
                "room-1", current.version, candidate_a, [event(next_seq, b"a"), event(next_seq + 1)]
            ),
            writer_b.commit("room-1", current.version, candidate_b, [event(next_seq, b"b")]),
            return_exceptions=True,
        )
        failures = [outcome for outcome in outcomes if outcome is not None]
        assert len(failures) == 1 and isinstance(failures[0], VersionConflict), outcomes
        a_won = outcomes[0] is None
        stored = await writer_b.load_room("room-1")
        assert stored == (candidate_a if a_won else candidate_b)
        # Only the winner's events are in the log.
        expected = [event(next_seq, b"a"), event(next_seq + 1)] if a_won else [event(next_seq, b"b")]
        assert await writer_a.read_events("room-1", next_seq - 1) == expected
        next_seq += len(expected)
        assert stored is not None
        current = stored


# --- events ---------------------------------------------------------------------------------------------


async def test_read_events_after_seq_and_limit(store: RoomStore) -> None:
    record = room()
    await store.create_room(record)
    for first in range(1, 31, 3):
        record = await commit_events(store, record, first, 3)
    assert [e.seq for e in await store.read_events("room-1", 0)] == list(range(1, 31))
    assert [e.seq for e in await store.read_events("room-1", 17)] == list(range(18, 31))
    assert [e.seq for e in await store.read_events("room-1", 5, limit=4)] == [6, 7, 8, 9]
    assert await store.read_events("room-1", 30) == []
    assert await store.oldest_event_seq("room-1") == 1
    with pytest.raises(InvalidStoreInput):
        await store.read_events("room-1", -1)
    with pytest.raises(InvalidStoreInput):
        await store.read_events("room-1", 0, limit=0)


async def test_oldest_event_seq_of_a_room_without_events(store: RoomStore) -> None:
    await store.create_room(room())
    assert await store.oldest_event_seq("room-1") == 1
    with pytest.raises(RoomNotFound):
        await store.oldest_event_seq("missing")


async def collect(source: AsyncGenerator[StoredEvent, None], queue: asyncio.Queue[StoredEvent]) -> None:
    async with contextlib.aclosing(source):
        async for item in source:
            await queue.put(item)


async def next_events(queue: asyncio.Queue[StoredEvent], count: int) -> list[int]:
    # wait_for only guards against a hang; nothing here asserts on timing.
    return [(await asyncio.wait_for(queue.get(), timeout=20)).seq for _ in range(count)]


async def test_tail_replays_missed_events_then_delivers_live_ones(backend: Backend) -> None:
    writer = backend.open()
    # A Redis subscriber on another replica sees the writer's events; SQLite notifies in-process.
    reader = backend.open() if backend.live_across_instances else writer
    record = room()
    await writer.create_room(record)
    record = await commit_events(writer, record, 1, 3)

    queue: asyncio.Queue[StoredEvent] = asyncio.Queue()
    task = asyncio.create_task(collect(reader.tail("room-1", 1), queue))
    try:
        assert await next_events(queue, 2) == [2, 3]
        record = await commit_events(writer, record, 4, 2)
        assert await next_events(queue, 2) == [4, 5]
        for seq in range(6, 11):
            record = await commit_events(writer, record, seq, 1)
        record = bump(record)  # a commit without events wakes nobody and breaks nothing
        await writer.commit("room-1", record.version - 1, record, [])
        record = await commit_events(writer, record, 11, 1)
        assert await next_events(queue, 6) == [6, 7, 8, 9, 10, 11]
        assert queue.empty()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_tail_of_several_subscribers_from_different_points(backend: Backend) -> None:
    writer = backend.open()
    reader = backend.open() if backend.live_across_instances else writer
    record = room()
    await writer.create_room(record, [event(1), event(2)])
    queues: list[asyncio.Queue[StoredEvent]] = [asyncio.Queue() for _ in range(3)]
    tasks = [
        asyncio.create_task(collect(reader.tail("room-1", after), queue))
        for after, queue in zip((0, 1, 2), queues, strict=True)
    ]
    try:
        await commit_events(writer, record, 3, 1)
        assert await next_events(queues[0], 3) == [1, 2, 3]
        assert await next_events(queues[1], 2) == [2, 3]
        assert await next_events(queues[2], 1) == [3]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_tail_ends_when_the_store_closes(backend: Backend) -> None:
    store = backend.open()
    await store.create_room(room(), [event(1)])
    queue: asyncio.Queue[StoredEvent] = asyncio.Queue()
    task = asyncio.create_task(collect(store.tail("room-1", 0), queue))
    assert await next_events(queue, 1) == [1]
    await store.close()
    await asyncio.wait_for(task, timeout=20)  # ends on its own, without an error
    with pytest.raises(StoreUnavailable):
        await store.load_room("room-1")


async def test_tail_refuses_unknown_rooms_and_future_seqs(store: RoomStore) -> None:
    await store.create_room(room(), [event(1)])
    with pytest.raises(RoomNotFound):
        await anext(store.tail("missing", 0))
    with pytest.raises(InvalidStoreInput):
        await anext(store.tail("room-1", 2))


# --- deadlines and claims --------------------------------------------------------------------------------


async def test_next_deadline_is_the_earliest_pending_one(store: RoomStore) -> None:
    assert await store.next_deadline_ms() is None
    await store.create_room(room("r1", deadline_ms=9_000))
    await store.create_room(room("r2", deadline_ms=4_000))
    await store.create_room(room("r3"))
    assert await store.next_deadline_ms() == 4_000
    r2 = await store.load_room("r2")
    assert r2 is not None
    await store.commit("r2", r2.version, bump(r2, deadline_ms=None), [])
    assert await store.next_deadline_ms() == 9_000


async def test_due_deadlines_are_claimed_once_each(store: RoomStore) -> None:
    await store.create_room(room("early", deadline_ms=1_000))
    await store.create_room(room("late", deadline_ms=5_000))
    await store.create_room(room("idle"))
    assert await store.claim_due(999, "A", 10_000, 10) == []
    assert await store.claim_due(2_000, "A", 10_000, 10) == [("early", 1_000)]
    assert await store.claim_due(2_000, "B", 10_000, 10) == []
    assert await store.claim_due(6_000, "B", 10_000, 10) == [("late", 5_000)]
    # Both claimed: the next thing to wake up for is the first lease expiry.
    assert await store.next_deadline_ms() == 12_000


async def test_claim_limit_takes_the_most_overdue_first(store: RoomStore) -> None:
    for index, deadline in enumerate([300, 100, 200, 400]):
        await store.create_room(room(f"r{index}", deadline_ms=deadline))
    assert await store.claim_due(1_000, "A", 60_000, 2) == [("r1", 100), ("r2", 200)]
    assert await store.claim_due(1_000, "A", 60_000, 5) == [("r0", 300), ("r3", 400)]


async def test_racing_replicas_claim_every_deadline_exactly_once(backend: Backend) -> None:
    replicas = [backend.open(), backend.open()]
    rng = random.Random(99)
    now = 1_000_000
    for round_no in range(30):
        room_ids = [f"round{round_no}-room{index}" for index in range(6)]
        for room_id in room_ids:
            await replicas[round_no % 2].create_room(room(room_id, deadline_ms=now - rng.randrange(0, 500)))

        async def drain(replica: RoomStore, owner: str, now: int) -> list[str]:
            mine: list[str] = []
            while batch := await replica.claim_due(now, owner, 60_000, rng.randint(1, 3)):
                mine.extend(room_id for room_id, _ in batch)
            return mine

        # Three competing claimers per replica, on two store instances (two connections / replicas).
        results = await asyncio.gather(
            *(
                drain(replica, f"owner-{index}-{task}", now)
                for index, replica in enumerate(replicas)
                for task in range(3)
            )
        )
        claimed = [room_id for result in results for room_id in result]
        assert sorted(claimed) == sorted(room_ids), f"round {round_no}: {results}"
        now += 1_000_000  # past every lease, but those rooms were claimed and then committed below
        for room_id in room_ids:
            current = await replicas[0].load_room(room_id)
            assert current is not None
            await replicas[1].commit(room_id, current.version, bump(current, deadline_ms=None), [])
    assert await replicas[0].next_deadline_ms() is None


async def test_an_expired_lease_lets_another_replica_claim(backend: Backend) -> None:
    replica_a, replica_b = backend.open(), backend.open()
    await replica_a.create_room(room(deadline_ms=1_000))
    assert await replica_a.claim_due(1_000, "A", 500, 10) == [("room-1", 1_000)]
    assert await replica_b.claim_due(1_499, "B", 500, 10) == []
    assert await replica_b.next_deadline_ms() == 1_500
    assert await replica_b.claim_due(1_500, "B", 500, 10) == [("room-1", 1_000)]
    # A's late release no longer owns the claim and changes nothing.
    await replica_a.release("room-1", "A")
    assert await replica_a.claim_due(1_600, "A", 500, 10) == []


async def test_release_gives_the_deadline_back(backend: Backend) -> None:
    replica_a, replica_b = backend.open(), backend.open()
    await replica_a.create_room(room(deadline_ms=1_000))
    assert await replica_a.claim_due(1_000, "A", 60_000, 10) == [("room-1", 1_000)]
    await replica_b.release("room-1", "B")  # not B's claim: no effect
    assert await replica_b.claim_due(2_000, "B", 60_000, 10) == []
    await replica_a.release("room-1", "A")
    assert await replica_b.next_deadline_ms() == 1_000
    assert await replica_b.claim_due(2_000, "B", 60_000, 10) == [("room-1", 1_000)]


async def test_a_commit_drops_the_claim_and_sets_the_new_deadline(backend: Backend) -> None:
    replica_a, replica_b = backend.open(), backend.open()
    first = room(deadline_ms=1_000)
    await replica_a.create_room(first)
    assert await replica_a.claim_due(1_000, "A", 60_000, 10) == [("room-1", 1_000)]
    # A fires the timeout: its commit starts the next turn with a new deadline.
    second = bump(first, deadline_ms=5_000)
    await replica_a.commit("room-1", 1, second, [event(1)])
    assert await replica_b.next_deadline_ms() == 5_000
    assert await replica_b.claim_due(4_999, "B", 60_000, 10) == []
    assert await replica_b.claim_due(5_000, "B", 60_000, 10) == [("room-1", 5_000)]
    # B's commit ends the game: no deadline, nothing to claim, ever.
    await replica_b.commit("room-1", 2, bump(second, phase="finished", deadline_ms=None), [event(2)])
    assert await replica_a.next_deadline_ms() is None
    assert await replica_a.claim_due(10**12, "A", 60_000, 10) == []


async def test_claim_arguments_are_validated(store: RoomStore) -> None:
    with pytest.raises(InvalidStoreInput):
        await store.claim_due(0, "", 1_000, 1)
    with pytest.raises(InvalidStoreInput):
        await store.claim_due(0, "A", 0, 1)
    with pytest.raises(InvalidStoreInput):
        await store.claim_due(0, "A", 1_000, 0)


# --- listing ----------------------------------------------------------------------------------------------

ALL = frozenset({"lobby", "playing", "finished"})


async def list_all(store: RoomStore, phases: frozenset[str], page_size: int) -> tuple[list[str], int]:
    ids: list[str] = []
    token, pages = "", 0
    while True:
        records, token = await store.list_rooms(phases=phases, page_size=page_size, page_token=token)
        ids.extend(record.room_id for record in records)
        pages += 1
        if not token:
            return ids, pages


async def test_list_rooms_paginates_newest_first_with_a_phase_filter(store: RoomStore) -> None:
    specs = [  # (room id, created_at, phase); ties on created_at are ordered by room id, descending
        ("m", 500, "lobby"),
        ("c", 100, "playing"),
        ("a", 300, "lobby"),
        ("b", 300, "lobby"),
        ("z", 200, "finished"),
        ("k", 300, "playing"),
        ("d", 900, "lobby"),
    ]
    for room_id, created, phase in specs:
        await store.create_room(room(room_id, created_at_ms=created, phase=phase))
    assert await list_all(store, ALL, 3) == (["d", "m", "k", "b", "a", "z", "c"], 3)
    assert await list_all(store, LISTED_PHASES, 2) == (["d", "m", "k", "b", "a", "c"], 3)
    assert await list_all(store, frozenset({"lobby"}), 2) == (["d", "m", "b", "a"], 2)
    assert await list_all(store, frozenset({"playing"}), 10) == (["k", "c"], 1)
    assert await list_all(store, frozenset({"finished"}), 1) == (["z"], 1)

    records, token = await store.list_rooms(phases={"lobby"}, page_size=3, page_token="")
    assert [r.room_id for r in records] == ["d", "m", "b"] and token
    assert records[0] == room("d", created_at_ms=900)

    # A room that starts playing stays in the lobby's default list, under its new phase.
    lobby_room = await store.load_room("b")
    assert lobby_room is not None
    await store.commit("b", 1, bump(lobby_room, phase="playing"), [])
    assert (await list_all(store, frozenset({"lobby"}), 2))[0] == ["d", "m", "a"]
    assert (await list_all(store, frozenset({"playing"}), 2))[0] == ["k", "b", "c"]
    assert (await list_all(store, LISTED_PHASES, 100))[0] == ["d", "m", "k", "b", "a", "c"]
    # ... and leaves it once finished.
    playing = await store.load_room("b")
    assert playing is not None
    await store.commit("b", 2, bump(playing, phase="finished"), [])
    assert (await list_all(store, LISTED_PHASES, 100))[0] == ["d", "m", "k", "a", "c"]


async def test_a_new_room_is_on_the_first_page_after_many_old_ones(store: RoomStore) -> None:
    for index in range(60):  # abandoned waiting rooms and running games, all older
        phase = "playing" if index % 3 == 0 else "lobby"
        await store.create_room(room(f"old-{index:02d}", created_at_ms=1_000 + index, phase=phase))
    await store.create_room(room("fresh", created_at_ms=5_000))
    records, token = await store.list_rooms(phases=LISTED_PHASES, page_size=50, page_token="")
    assert records[0].room_id == "fresh" and len(records) == 50 and token
    assert {r.phase for r in records} == {"lobby", "playing"}


async def test_pages_see_every_room_once_while_rooms_are_created(store: RoomStore) -> None:
    for index in range(25):
        await store.create_room(room(f"r{index:02d}", created_at_ms=10_000 + index * 10))
    seen: list[str] = []
    token, pages = "", 0
    while True:
        records, token = await store.list_rooms(phases=LISTED_PHASES, page_size=10, page_token=token)
        seen.extend(r.room_id for r in records)
        pages += 1
        # Between pages: a newer room, and one created in the same millisecond as a listed one.
        await store.create_room(room(f"new-{pages}", created_at_ms=20_000 + pages))
        await store.create_room(room(f"r{pages:02d}x", created_at_ms=10_000 + pages * 10))
        if not token:
            break
    assert pages == 3
    originals = [f"r{index:02d}" for index in reversed(range(25))]
    assert [room_id for room_id in seen if room_id in originals] == originals, (
        "each older room once, in order"
    )
    assert len(seen) == len(set(seen))
    assert not any(room_id.startswith("new-") for room_id in seen), "newer rooms belong to a first page"


async def test_list_rooms_when_empty_and_with_bad_arguments(store: RoomStore) -> None:
    assert await store.list_rooms(phases=ALL, page_size=10, page_token="") == ([], "")
    # Fifteen digits, but not ASCII ones: what list_key writes is the only token that parses.
    for bad_token in ("garbage", "12:abc", "000000000000100:bad id", "²" * 15 + ":abc", "١" * 15 + ":abc"):
        with pytest.raises(InvalidStoreInput):
            await store.list_rooms(phases=ALL, page_size=10, page_token=bad_token)
    for bad_phases in ({"paused"}, set(), "lobby"):
        with pytest.raises(InvalidStoreInput):
            await store.list_rooms(phases=bad_phases, page_size=10, page_token="")
    with pytest.raises(InvalidStoreInput):
        await store.list_rooms(phases=ALL, page_size=0, page_token="")


# --- expiry -------------------------------------------------------------------------------------------------


async def idle_ids(store: RoomStore, phase: str, before: int, after: str = "", limit: int = 100) -> list[str]:
    records = await store.idle_rooms(phase=phase, updated_before_ms=before, after=after, limit=limit)
    return [record.room_id for record in records]


async def test_idle_rooms_are_the_least_recently_changed_of_a_phase(store: RoomStore) -> None:
    # updated_at_ms = created_at_ms + version (see room())
    for room_id, created, phase in [
        ("a", 100, "lobby"),
        ("b", 50, "lobby"),
        ("c", 10, "playing"),
        ("d", 70, "finished"),
    ]:
        await store.create_room(room(room_id, created_at_ms=created, phase=phase))
    assert await idle_ids(store, "lobby", 1_000) == ["b", "a"]
    assert await idle_ids(store, "lobby", 51) == ["b"], "the cutoff is inclusive"
    assert await idle_ids(store, "lobby", 50) == []
    assert await idle_ids(store, "finished", 1_000) == ["d"]
    assert await idle_ids(store, "lobby", 1_000, after=list_key(51, "b")) == ["a"]
    assert await idle_ids(store, "lobby", 1_000, limit=1) == ["b"]
    # A change moves the room to the end; a game that starts leaves the lobby's candidates.
    b = await store.load_room("b")
    assert b is not None
    await store.commit("b", 1, bump(b, updated_at_ms=500), [])
    assert await idle_ids(store, "lobby", 1_000) == ["a", "b"]
    a = await store.load_room("a")
    assert a is not None
    await store.commit("a", 1, bump(a, phase="playing", updated_at_ms=600), [])
    assert await idle_ids(store, "lobby", 1_000) == ["b"]
    for bad in ({"phase": "playing"}, {"phase": "lobby", "limit": 0}, {"phase": "lobby", "after": "x"}):
        args = {"phase": "lobby", "updated_before_ms": 0, "after": "", "limit": 10, **bad}
        with pytest.raises(InvalidStoreInput):
            await store.idle_rooms(**args)  # type: ignore[arg-type]


async def test_delete_room_removes_it_with_its_events_and_deadline(backend: Backend) -> None:
    store = backend.open()
    doomed = room("doomed", deadline_ms=1_000)
    await store.create_room(doomed, [event(1), event(2)])
    await store.create_room(room("kept", created_at_ms=1, deadline_ms=2_000), [event(1)])
    assert not await store.delete_room("doomed", 7), "a stale version deletes nothing"
    assert await store.load_room("doomed") == doomed
    assert await store.delete_room("doomed", 1)
    assert await store.load_room("doomed") is None
    assert await store.read_events("doomed", 0) == []
    assert await store.next_deadline_ms() == 2_000
    assert await store.claim_due(10**6, "A", 1_000, 10) == [("kept", 2_000)]
    assert (await list_all(store, ALL, 10))[0] == ["kept"]
    assert await idle_ids(store, "lobby", 10**12) == ["kept"]
    assert (await store.count_rooms())["lobby"] == 1
    assert not await store.delete_room("doomed", 1), "already gone"
    with pytest.raises(RoomNotFound):
        await store.commit("doomed", 1, bump(doomed), [])
    # The id is free again, with a log of its own.
    await store.create_room(room("doomed"), [event(1, b"again")])
    assert [e.payload for e in await store.read_events("doomed", 0)] == [b"again"]
    if backend.kind == "redis":
        client = aioredis.Redis.from_url(REDIS_URL)
        try:
            assert await store.delete_room("doomed", 1) and await store.delete_room("kept", 1)
            prefix = store.prefix  # type: ignore[attr-defined]
            left = [key async for key in client.scan_iter(match=f"{prefix}*")]
            # Only the (empty) sorted sets' and hashes' keys could remain, and Redis drops empty ones.
            assert left == [], left
        finally:
            await client.aclose()


async def test_racing_replicas_delete_a_room_exactly_once(backend: Backend) -> None:
    replicas = [backend.open() for _ in range(4)]
    for index in range(20):
        await replicas[0].create_room(room(f"r{index}", created_at_ms=index))
    outcomes = await asyncio.gather(
        *(replica.delete_room(f"r{index}", 1) for index in range(20) for replica in replicas)
    )
    assert sum(outcomes) == 20
    assert await replicas[1].list_rooms(phases=ALL, page_size=10, page_token="") == ([], "")
