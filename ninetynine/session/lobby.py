"""The lobby: creating, joining, watching, leaving and listing rooms, adding bots, starting the game.

Each request is one step of the commit pipeline (:meth:`~ninetynine.session.roomcache.RoomCache.mutate`)
over the document functions of :mod:`ninetynine.session.rooms`; only ``create_room`` writes a new
room directly.
"""

from __future__ import annotations

from ninetynine.session import games, rooms
from ninetynine.session.enginecalls import EngineCalls
from ninetynine.session.errors import session_error
from ninetynine.session.roomcache import Loaded, RoomCache, Step, mode_of, now_ms
from ninetynine.session.store.base import (
    LISTED_PHASES,
    InvalidStoreInput,
    RoomAlreadyExists,
    RoomRecord,
    StoredEvent,
)
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb


def request_game(request: pb.CreateRoomRequest) -> str:
    """The registry's kind a CreateRoom asks for (empty: the adding game)."""
    return request.game


def require_host(doc: doc_pb.RoomDocument, token: str) -> rooms.Caller:
    caller = rooms.identify(doc, token)
    if caller.player_id is None or caller.player_id != doc.host_player_id:
        raise session_error("NOT_HOST")
    return caller


class Lobby:
    """The room RPCs before and around a game (everything but plays, views and results)."""

    def __init__(self, cache: RoomCache, engine: EngineCalls, *, time_scale: float) -> None:
        self.cache = cache
        self.store = cache.store
        self.engine = engine
        self.time_scale = time_scale

    async def create_room(self, request: pb.CreateRoomRequest) -> pb.CreateRoomResponse:
        """A new room with the caller as host; options, rules and seats are refused now, not at StartGame."""
        await games.entry(request_game(request)).check_create(request, self.engine)
        for _ in range(10):
            try:
                return await self._create(rooms.new_room_id(), request)
            except RoomAlreadyExists:
                continue
        raise session_error("ROOM_BUSY")

    async def _create(
        self, room_id: str, request: pb.CreateRoomRequest, rematch_of: str = ""
    ) -> pb.CreateRoomResponse:
        """Store a new room with its host seated; RoomAlreadyExists when the id is taken."""
        now = now_ms()
        doc, token = rooms.new_room(
            room_id,
            request.name,
            request.options,
            request.max_seats,
            now,
            request.rules,
            request.overrides,
            request_game(request),
            request.trick_options,
        )
        doc.rematch_of = rematch_of
        joined = pb.RoomEvent(
            seq=1,
            at_ms=now,
            batch_end=True,
            player_joined=pb.PlayerJoined(seat=rooms.public_seat(doc, doc.seats[0])),
        )
        doc.last_seq = 1
        record = RoomRecord(
            room_id=room_id,
            version=1,
            phase="lobby",
            mode=mode_of(doc),
            seats_total=doc.max_seats,
            seats_taken=1,
            created_at_ms=now,
            updated_at_ms=now,
            data=doc.SerializeToString(),
            deadline_ms=None,
        )
        await self.cache.store_call(
            "create",
            self.store.create_room(record, [StoredEvent(1, "all", "", joined.SerializeToString())]),
        )
        self.cache.remember(Loaded(record, doc))
        return pb.CreateRoomResponse(
            room=rooms.public_room(doc), player_id=doc.host_player_id, seat_token=token
        )

    async def rematch(self, token: str) -> pb.RematchResponse:
        """A seat in the finished game's rematch room: created by the first player asking, joined after."""
        chosen: dict[str, str] = {}
        source = doc_pb.RoomDocument()

        async def step(doc: doc_pb.RoomDocument, now: int) -> Step:
            caller = rooms.identify(doc, token)
            if caller.player_id is None:
                raise session_error("SPECTATOR_CANNOT_ACT")
            if doc.phase != pb.ROOM_PHASE_FINISHED:
                raise session_error("GAME_NOT_FINISHED", roomId=doc.room_id)
            seat = rooms.seat_of(doc, caller.player_id)
            chosen["name"] = seat.name
            seat.token_hash = b""  # the seat moves on: asking twice cannot seat it twice
            if not doc.rematch_room_id:
                doc.rematch_room_id = rooms.new_room_id()
            chosen["room_id"] = doc.rematch_room_id
            source.CopyFrom(doc)
            return Step()

        await self.cache.mutate(rooms.token_room(token), step)
        room_id, name = chosen["room_id"], chosen["name"]
        try:
            again = pb.CreateRoomRequest(
                name=name,
                options=source.options,
                max_seats=source.max_seats,
                rules=source.rules,
                overrides=source.overrides,
                game=source.game,
                trick_options=source.trick_options if source.HasField("trick_options") else None,
            )
            created = await self._create(room_id, again, source.room_id)
        except RoomAlreadyExists:
            # Made by an earlier ask (or, once in a billion, an unrelated room with that code).
            if (await self.cache.load(room_id, fresh=True)).doc.rematch_of != source.room_id:
                raise session_error("ROOM_BUSY") from None
            return pb.RematchResponse(joined=await self.join_room(room_id, name))
        return pb.RematchResponse(
            joined=pb.JoinRoomResponse(
                room=created.room, player_id=created.player_id, seat_token=created.seat_token
            )
        )

    async def join_room(self, room_id: str, name: str) -> pb.JoinRoomResponse:
        seated: dict[str, str] = {}

        async def step(doc: doc_pb.RoomDocument, now: int) -> Step:
            player_id, token = rooms.add_seat(doc, name, bot=False)
            seated.update(player_id=player_id, token=token)
            out = Step()
            out.add(pb.RoomEvent(player_joined=pb.PlayerJoined(seat=rooms.public_seat(doc, doc.seats[-1]))))
            return out

        loaded, _ = await self.cache.mutate(room_id, step)
        return pb.JoinRoomResponse(
            room=rooms.public_room(loaded.doc), player_id=seated["player_id"], seat_token=seated["token"]
        )

    async def add_bot(self, token: str, name: str) -> pb.AddBotResponse:
        seated: dict[str, str] = {}

        async def step(doc: doc_pb.RoomDocument, now: int) -> Step:
            require_host(doc, token)
            bot_name = name or f"봇 {sum(1 for s in doc.seats if s.bot) + 1}"
            player_id, _ = rooms.add_seat(doc, bot_name, bot=True)
            seated["player_id"] = player_id
            out = Step()
            out.add(pb.RoomEvent(player_joined=pb.PlayerJoined(seat=rooms.public_seat(doc, doc.seats[-1]))))
            return out

        loaded, _ = await self.cache.mutate(rooms.token_room(token), step)
        return pb.AddBotResponse(room=rooms.public_room(loaded.doc), player_id=seated["player_id"])

    async def spectate(self, room_id: str) -> pb.SpectateResponse:
        issued: dict[str, str] = {}

        async def step(doc: doc_pb.RoomDocument, now: int) -> Step:
            issued["token"] = rooms.add_spectator(doc, now, self._spectator_grace_ms())
            return Step()

        loaded, _ = await self.cache.mutate(room_id, step)
        return pb.SpectateResponse(room=rooms.public_room(loaded.doc), spectator_token=issued["token"])

    def _spectator_grace_ms(self) -> int:
        return round(rooms.SPECTATOR_GRACE_MS * self.time_scale)

    async def leave_room(self, token: str) -> pb.LeaveRoomResponse:
        async def step(doc: doc_pb.RoomDocument, now: int) -> Step:
            caller = rooms.identify(doc, token)
            out = Step()
            if caller.player_id is None:
                rooms.remove_spectator(doc, token)
                return out
            if doc.phase == pb.ROOM_PHASE_LOBBY:
                rooms.remove_seat(doc, caller.player_id)
                out.add(pb.RoomEvent(player_left=pb.PlayerLeft(player_id=caller.player_id)))
                if not any(not s.bot for s in doc.seats):
                    doc.phase = pb.ROOM_PHASE_FINISHED  # nobody left to start it: close the room
                return out
            seat = rooms.seat_of(doc, caller.player_id)
            if seat.left:
                return out
            seat.left = True
            seat.connected = False
            seat.token_hash = b""  # the token stops working: leaving is final
            out.add(pb.RoomEvent(player_left=pb.PlayerLeft(player_id=caller.player_id, auto_played=True)))
            playing = doc.phase == pb.ROOM_PHASE_PLAYING
            out.force_deadline = playing and games.of(doc).owes(doc, caller.player_id)
            return out

        loaded, _ = await self.cache.mutate(rooms.token_room(token), step)
        return pb.LeaveRoomResponse(room=rooms.public_room(loaded.doc))

    async def start_game(self, token: str) -> pb.StartGameResponse:
        async def step(doc: doc_pb.RoomDocument, now: int) -> Step:
            require_host(doc, token)
            if doc.phase != pb.ROOM_PHASE_LOBBY:
                raise session_error("GAME_ALREADY_STARTED", roomId=doc.room_id)
            game = games.of(doc)
            game.check_start(len(doc.seats))
            setup = await game.setup(self.engine, doc, now)
            doc.state.CopyFrom(setup.state)
            doc.phase = pb.ROOM_PHASE_PLAYING
            doc.started_at_ms = now
            out = Step()
            out.add_game(setup.events)
            return out

        loaded, _ = await self.cache.mutate(rooms.token_room(token), step)
        return pb.StartGameResponse(room=rooms.public_room(loaded.doc))

    async def get_room(self, room_id: str) -> pb.GetRoomResponse:
        return pb.GetRoomResponse(room=rooms.public_room((await self.cache.load(room_id, fresh=True)).doc))

    async def list_rooms(
        self, page_size: int, page_token: str, phase: pb.RoomPhase.ValueType = pb.ROOM_PHASE_UNSPECIFIED
    ) -> pb.ListRoomsResponse:
        """Newest first: the lobby and running games, or the one ``phase`` asked for."""
        size = page_size or 20
        if not 1 <= size <= 100:
            raise session_error("INVALID_PAGE_TOKEN", pageSize=page_size)
        if phase == pb.ROOM_PHASE_UNSPECIFIED:
            phases = LISTED_PHASES
        elif phase in rooms.PHASE_NAMES:
            phases = frozenset({rooms.PHASE_NAMES[phase]})
        else:
            raise session_error("INVALID_PHASE", phase=int(phase))
        try:
            records, next_token = await self.cache.store_call(
                "list", self.store.list_rooms(phases=phases, page_size=size, page_token=page_token)
            )
        except InvalidStoreInput:
            raise session_error("INVALID_PAGE_TOKEN") from None
        docs = [doc_pb.RoomDocument.FromString(r.data) for r in records]
        return pb.ListRoomsResponse(rooms=[rooms.public_room(d) for d in docs], next_page_token=next_token)
