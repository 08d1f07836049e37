"""``count_rooms``: the rooms-by-phase gauge reads it, on both stores."""

from __future__ import annotations

from ninetynine.session.store import RoomStore
from tests.session.store.test_contract import bump, room


async def test_count_rooms_follows_phase_changes(store: RoomStore) -> None:
    assert await store.count_rooms() == {"finished": 0, "lobby": 0, "playing": 0}
    rooms = [room(f"count-{i}", created_at_ms=1000 + i) for i in range(5)]
    for created in rooms:
        await store.create_room(created)
    playing = bump(rooms[0], phase="playing")
    await store.commit(rooms[0].room_id, rooms[0].version, playing, [])
    await store.commit(playing.room_id, playing.version, bump(playing, phase="finished"), [])
    await store.commit(rooms[1].room_id, rooms[1].version, bump(rooms[1], phase="playing"), [])
    assert await store.count_rooms() == {"finished": 1, "lobby": 3, "playing": 1}
