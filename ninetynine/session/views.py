"""Views: what each viewer sees of a room version, and events as a viewer may see them.

Views are a pure projection of the stored state, computed here with the rules' observer instead of
one engine round trip per viewer per move. Every subscriber of a room asks for the view of the same
version right after a move, so the parts all viewers share are built once per version
(:class:`Shared`), a player's own part once per (version, viewer, language), and the results are
kept as messages and as serialized bytes for the batched streams.

A subscription that asked for ``view_json`` (the gateway's, for its WebSocket clients) gets the view
as the client protocol's JSON instead, as the game's rules write it: the public part's text once per
version, then the viewer's own keys (:meth:`~ninetynine.session.games.Game.public_view_json`,
:meth:`~ninetynine.session.games.Game.private_view_json`), so such a view is never built as a
message, here or in the gateway.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import orjson
from google.protobuf.message import Message

from ninetynine.common.codec import Codec
from ninetynine.common.errors import Lang
from ninetynine.common.wire import length_delimited
from ninetynine.session import games, rooms
from ninetynine.session.roomcache import Loaded, RoomCache
from ninetynine.session.store.base import StoredEvent
from ninetynine.session.v1 import session_service_pb2 as pb

_UPDATE_FIELDS = pb.ViewUpdate.DESCRIPTOR.fields_by_name

ViewKey = tuple[str, int, str | None, Lang]
# The client JSON of the games' views: the gateway's encoding of the same messages.
_CLIENT_JSON = Codec()


def visible(event: StoredEvent, viewer: str | None) -> bool:
    if event.audience == "all":
        return True
    if event.audience == "only":
        return viewer is not None and viewer == event.player_id
    return viewer != event.player_id


@dataclass(slots=True)
class Shared:
    """What every viewer of one room version gets alike, built on first use.

    ``head`` is the ``ViewUpdate`` without its view (seq and room); ``public`` the view's public
    part, as a message and serialized. A viewer's ``ViewUpdate`` is ``head`` followed by its view
    field holding ``public`` and then the viewer's own fields: protobuf reads concatenated
    messages as one (the two parts set disjoint fields), so a move's views cost one public part
    per room plus a hand per player, not a whole view per viewer.
    """

    room: pb.Room
    head: bytes = b""
    public: Message | None = None
    public_bytes: bytes = b""
    # The client JSON of the view's public part (built without ``public`` for a game that writes it).
    public_json: bytes = b""


def client_view_json(
    entry: games.Game,
    game: object,
    viewer: str | None,
    shared: Shared,
    deadline_ms: int,
    whole_view: Callable[[], Message],
) -> bytes:
    """The client JSON of ``viewer``'s view of ``game``: byte for byte the gateway's encoding of
    the view message. The shared part's text is kept in ``shared.public_json``; ``whole_view``
    gives the view message when the game writes no JSON of its own for this viewer."""
    own = entry.private_view_json(game, viewer)
    if own is not None and not shared.public_json:
        # orjson's bytes are its whole work buffer: the kept text gets an allocation of its size.
        shared.public_json = bytes(memoryview(entry.public_view_json(game, deadline_ms) or b""))
    if own is None or not shared.public_json:
        whole: Any = whole_view()
        return orjson.dumps(_CLIENT_JSON.encoder(whole.DESCRIPTOR)(whole))
    if own == b"{}":
        return shared.public_json
    # "{shared}" and "{own}" make "{shared,own}": the own keys are the object's last ones.
    return shared.public_json[:-1] + b"," + own[1:]


def _head(loaded: Loaded, shared: Shared) -> bytes:
    """``shared.head``, built on first use."""
    if not shared.head:
        shared.head = pb.ViewUpdate(seq=loaded.doc.last_seq, room=shared.room).SerializeToString()
    return shared.head


class Views:
    """Views and filtered events of the rooms in :class:`RoomCache`, with caches of recent versions."""

    def __init__(self, cache: RoomCache) -> None:
        self.cache = cache
        # View messages of recent room versions, per (room, version, viewer, lang), and the parts
        # all viewers of a version share.
        self._views: OrderedDict[ViewKey, pb.SubscribeResponse] = OrderedDict()
        self._view_bytes: OrderedDict[ViewKey, bytes] = OrderedDict()
        # Serialized ViewUpdates with the view as client JSON, per (room, version, viewer).
        self._view_json: OrderedDict[tuple[str, int, str | None], bytes] = OrderedDict()
        # Hidden stand-ins of events, shared by every subscriber who may not see them.
        self._hidden: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._shared: OrderedDict[tuple[str, int], Shared] = OrderedDict()
        self._size = 4096

    def _shared_parts(self, loaded: Loaded) -> Shared:
        """The parts of ``loaded``'s view messages that are the same for every viewer."""
        key = (loaded.record.room_id, loaded.record.version)
        shared = self._shared.get(key)
        if shared is None:
            shared = self._shared[key] = Shared(rooms.public_room(loaded.doc))
            while len(self._shared) > self._size:
                self._shared.popitem(last=False)
        return shared

    def _public_view(self, loaded: Loaded) -> Shared:
        """:meth:`_shared_parts` with ``public`` built (left None when no game was ever started)."""
        shared = self._shared_parts(loaded)
        if shared.public is None and loaded.doc.HasField("state"):
            doc = loaded.doc
            public = games.of(doc).public_view(loaded.game_state(), games.shown_deadline_ms(doc))
            shared.public, shared.public_bytes = public, public.SerializeToString()
        return shared

    def _private_view(self, loaded: Loaded, viewer: str | None, lang: Lang) -> Message:
        return games.of(loaded.doc).private_view(loaded.game_state(), viewer, lang)

    def view_of(self, loaded: Loaded, viewer: str | None, lang: Lang) -> Message | None:
        """The whole view of ``viewer`` (the game's view message; None before the game starts)."""
        public = self._public_view(loaded).public
        if public is None:
            return None
        out = type(public)()
        out.CopyFrom(public)
        out.MergeFrom(self._private_view(loaded, viewer, lang))
        return out

    async def get_view(self, token: str, lang: Lang) -> pb.GetViewResponse:
        loaded = await self.cache.load(rooms.token_room(token), fresh=True)
        caller = rooms.identify(loaded.doc, token)
        response = pb.GetViewResponse(
            room=rooms.public_room(loaded.doc), seq=loaded.doc.last_seq, player_id=caller.player_id or ""
        )
        view = self.view_of(loaded, caller.player_id, lang)
        if view is not None:
            getattr(response, games.of(loaded.doc).view_field).CopyFrom(view)
        return response

    def filtered(self, stored: StoredEvent, viewer: str | None) -> pb.RoomEvent:
        """The event ``viewer`` gets for ``stored``: itself, or a hidden stand-in keeping its seq."""
        event = pb.RoomEvent.FromString(stored.payload)
        if visible(stored, viewer):
            return event
        hidden = pb.RoomEvent(seq=event.seq, at_ms=event.at_ms, batch_end=event.batch_end, hidden=pb.Hidden())
        if event.HasField("play_answer"):  # the mover's answer, whoever the event itself is for
            hidden.play_answer.CopyFrom(event.play_answer)
        return hidden

    def event_bytes(self, room_id: str, stored: StoredEvent, viewer: str | None) -> bytes:
        """The serialized ``RoomEvent`` ``viewer`` gets for ``stored``: as stored, or its hidden stand-in."""
        if visible(stored, viewer):
            return stored.payload
        key = (room_id, stored.seq)
        hidden = self._hidden.get(key)
        if hidden is None:
            hidden = self._hidden[key] = self.filtered(stored, viewer).SerializeToString()
            while len(self._hidden) > self._size:
                self._hidden.popitem(last=False)
        return hidden

    def _view_message(self, loaded: Loaded, viewer: str | None, lang: Lang) -> pb.SubscribeResponse:
        """The ``view`` message of ``loaded`` for one viewer, built once per room version.

        Every subscriber of a room asks for the view of the same version right after a batch: the
        spectators share one message, each player gets theirs, and the ``room`` part is shared too.
        Keyed by the record version (it bumps on every commit), so a cached message is never stale.
        The cached messages are handed to several streams as they are: nobody may modify them.
        """
        record = loaded.record
        key = (record.room_id, record.version, viewer, lang)
        message = self._views.get(key)
        if message is not None:
            self._views.move_to_end(key)
            return message
        update = pb.ViewUpdate(seq=loaded.doc.last_seq, room=self._shared_parts(loaded).room)
        view = self.view_of(loaded, viewer, lang)
        if view is not None:
            getattr(update, games.of(loaded.doc).view_field).CopyFrom(view)
        message = self._views[key] = pb.SubscribeResponse(view=update)
        while len(self._views) > self._size:
            self._views.popitem(last=False)
        return message

    async def _at(self, room_id: str, seq: int) -> Loaded | None:
        """The room as of event ``seq``, or None when a newer move is already stored."""
        loaded = await self.cache.current(room_id, seq)
        if loaded.doc.last_seq != seq:
            return None  # a newer move is already stored: its own batch end brings the view
        return loaded

    async def update(
        self, room_id: str, seq: int, viewer: str | None, lang: Lang
    ) -> pb.SubscribeResponse | None:
        """The ``view`` message after event ``seq`` (None when a newer move is stored)."""
        loaded = await self._at(room_id, seq)
        return None if loaded is None else self._view_message(loaded, viewer, lang)

    async def update_bytes(
        self, room_id: str, seq: int, viewer: str | None, lang: Lang, *, view_json: bool = False
    ) -> bytes | None:
        """The serialized ``ViewUpdate`` after event ``seq``, built once per (version, viewer, lang);
        with ``view_json``, its view as client JSON, once per (version, viewer)."""
        loaded = await self._at(room_id, seq)
        if loaded is None:
            return None
        if view_json:
            return self._update_json(loaded, viewer)
        key = (room_id, loaded.record.version, viewer, lang)
        encoded = self._view_bytes.get(key)
        if encoded is None:
            shared = self._public_view(loaded)
            encoded = _head(loaded, shared)
            if shared.public is not None:
                private = self._private_view(loaded, viewer, lang).SerializeToString()
                number = _UPDATE_FIELDS[games.of(loaded.doc).view_field].number
                encoded += length_delimited(number, shared.public_bytes + private)
            self._view_bytes[key] = encoded
            while len(self._view_bytes) > self._size:
                self._view_bytes.popitem(last=False)
        return encoded

    def _update_json(self, loaded: Loaded, viewer: str | None) -> bytes:
        """The serialized ``ViewUpdate`` of :meth:`update_bytes` with ``view_json``."""
        key = (loaded.record.room_id, loaded.record.version, viewer)
        encoded = self._view_json.get(key)
        if encoded is None:
            doc = loaded.doc
            shared = self._shared_parts(loaded)
            encoded = _head(loaded, shared)
            if doc.HasField("state"):
                entry = games.of(doc)
                text = client_view_json(
                    entry,
                    loaded.game_state(),
                    viewer,
                    shared,
                    games.shown_deadline_ms(doc),
                    # The JSON leaves the refusal texts out: the view of any language gives the same.
                    lambda: cast(Message, self.view_of(loaded, viewer, "ko")),
                )
                encoded += length_delimited(_UPDATE_FIELDS[entry.view_field + "_json"].number, text)
            self._view_json[key] = encoded
            while len(self._view_json) > self._size:
                self._view_json.popitem(last=False)
        return encoded
