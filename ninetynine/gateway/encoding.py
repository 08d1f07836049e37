"""WebSocket frames of pushed server messages, encoded once and shared by every connection that gets them.

Each connection follows its room through its own Subscribe stream, so the players and spectators of
a room receive equal messages as separate objects: the same ``event`` (audience "all"), the same
``room`` update, the same spectator ``view``. :class:`SharedServerText` keys the frame payload (the
UTF-8 JSON text) by the message's deterministic protobuf bytes (cheap, done in C) and keeps the
recent ones, so the JSON is built once per audience instead of once per connection. Direct replies
(with a client ``id``), kinds sent to one connection only and a seated player's own view (it holds
that player's hand: only that player gets it) are encoded as they come, without a key to build and
an entry that would only push the shared frames out.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from ninetynine.gateway.convert import JsonId, exact_copy, server_bytes
from ninetynine.gateway.v1 import gateway_service_pb2 as gw

__all__ = ["SHARED_KINDS", "SharedServerText"]

# Pushed kinds that several connections receive alike.
SHARED_KINDS: Final = frozenset({"event", "view", "room", "snapshot"})


class SharedServerText:
    """A bounded LRU of ``message bytes -> frame payload`` for the pushed kinds in ``SHARED_KINDS``."""

    def __init__(self, max_entries: int = 2048) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be >= 1")
        self.max_entries = max_entries
        self._frames: OrderedDict[bytes, bytes] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._frames)

    def frame(self, msg: gw.ServerMessage, reply_id: JsonId | None) -> bytes:
        """The payload for ``msg``: equal to ``server_bytes(msg, reply_id)``, shared when it can be."""
        if reply_id is not None:
            return server_bytes(msg, reply_id)
        kind = msg.WhichOneof("kind")
        if kind not in SHARED_KINDS or (
            kind == "view" and (msg.view.view.viewer_id or msg.view.trick.viewer_id)
        ):
            return server_bytes(msg)
        key = msg.SerializeToString(deterministic=True)
        frame = self._frames.get(key)
        if frame is not None:
            self._frames.move_to_end(key)
            self.hits += 1
            return frame
        self.misses += 1
        frame = self._frames[key] = exact_copy(server_bytes(msg))
        if len(self._frames) > self.max_entries:
            self._frames.popitem(last=False)
        return frame
