"""The expiry sweep (ninetynine.session.expiry) on both real stores, with a clock the test moves."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from ninetynine.session.expiry import STALE_PRESENCE_MS, ExpiryPolicy, RoomExpiry
from ninetynine.session.store import RoomRecord, RoomStore
from ninetynine.session.v1 import room_document_pb2 as doc_pb

from .conftest import Backend
from .test_contract import event

MINUTE = 60_000
IDLE = 15 * MINUTE
RETENTION = 7 * 24 * 60 * MINUTE
T0 = 1_700_000_000_000


def record(
    room_id: str, phase: str, updated: int, *, connected: bool = False, version: int = 1
) -> RoomRecord:
    doc = doc_pb.RoomDocument(room_id=room_id)
    doc.seats.add(player_id="p1", name="A", connected=connected)
    doc.seats.add(player_id="bot-1", name="봇", bot=True, connected=True)  # bots never count
    return RoomRecord(room_id, version, phase, "kr-product", 4, 2, T0, updated, doc.SerializeToString(), None)


class Sweeper:
    def __init__(self, store: RoomStore, batch: int = 100) -> None:
        self.now = T0
        self.counter = Counter("expired", "", ["reason"], registry=CollectorRegistry())
        self.expiry = RoomExpiry(
            store,
            ExpiryPolicy(IDLE, RETENTION, batch),
            self.counter,
            store.delete_room,
            clock=lambda: self.now,
        )

    def count(self, reason: str) -> float:
        return float(self.counter.labels(reason)._value.get())


async def ids(store: RoomStore) -> set[str]:
    records, _ = await store.list_rooms(phases={"lobby", "playing", "finished"}, page_size=100, page_token="")
    return {r.room_id for r in records}


async def test_idle_lobby_rooms_expire_after_the_idle_time_unless_a_player_is_connected(
    store: RoomStore,
) -> None:
    sweeper = Sweeper(store)
    await store.create_room(record("abandoned", "lobby", T0), [event(1)])
    await store.create_room(record("waiting", "lobby", T0, connected=True))
    await store.create_room(record("recent", "lobby", T0 + 5 * MINUTE))
    await store.create_room(record("game", "playing", T0))
    sweeper.now = T0 + IDLE - 1
    assert await sweeper.expiry.sweep() == 0
    sweeper.now = T0 + IDLE
    assert await sweeper.expiry.sweep() == 1
    assert await ids(store) == {"waiting", "recent", "game"}
    assert await store.read_events("abandoned", 0) == []
    sweeper.now = T0 + 5 * MINUTE + IDLE
    assert await sweeper.expiry.sweep() == 1
    # A connected mark nothing refreshed for a day is a dead replica's: the room goes too.
    sweeper.now = T0 + STALE_PRESENCE_MS - 1
    assert await sweeper.expiry.sweep() == 0
    sweeper.now = T0 + STALE_PRESENCE_MS
    assert await sweeper.expiry.sweep() == 1
    assert await ids(store) == {"game"}, "a running game never expires"
    assert sweeper.count("lobby_idle") == 3


async def test_many_idle_connected_rooms_do_not_starve_an_abandoned_one(store: RoomStore) -> None:
    sweeper = Sweeper(store, batch=2)
    for index in range(5):  # least recently changed first: these come before the abandoned one
        await store.create_room(record(f"waiting-{index}", "lobby", T0 + index, connected=True))
    await store.create_room(record("abandoned", "lobby", T0 + 10))
    sweeper.now = T0 + 10 + IDLE
    swept = [await sweeper.expiry.sweep() for _ in range(3)]
    assert swept == [0, 0, 1], "each sweep reads 2 and the next one goes on after them"
    assert "abandoned" not in await ids(store)


async def test_finished_rooms_are_kept_for_the_retention_period(store: RoomStore) -> None:
    sweeper = Sweeper(store)
    await store.create_room(record("done", "finished", T0), [event(1), event(2)])
    await store.create_room(record("later", "finished", T0 + MINUTE))
    sweeper.now = T0 + RETENTION - 1
    assert await sweeper.expiry.sweep() == 0
    assert [e.seq for e in await store.read_events("done", 0)] == [1, 2], "the replay is still there"
    sweeper.now = T0 + RETENTION
    assert await sweeper.expiry.sweep() == 1
    assert await store.load_room("done") is None and await store.read_events("done", 0) == []
    assert await ids(store) == {"later"}
    assert sweeper.count("finished_retention") == 1


async def test_a_room_changed_after_the_sweep_read_it_stays(backend: Backend) -> None:
    store, other_replica = backend.open(), backend.open()
    sweeper = Sweeper(store)
    stale = record("r", "lobby", T0)
    await store.create_room(stale)
    await other_replica.commit("r", 1, record("r", "lobby", T0 + 1, version=2), [])  # someone joined
    assert not await sweeper.expiry._expire(stale, "lobby_idle")
    assert await store.load_room("r") is not None
    assert sweeper.count("lobby_idle") == 0
