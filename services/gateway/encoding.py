"""WebSocket text of pushed server messages, encoded once and shared by every connection that gets it.

Each connection follows its room through its own Subscribe stream, so the players and spectators of
a room receive equal messages as separate objects: the same ``event`` (audience "all"), the same
``room`` update, the same spectator ``view``. :class:`SharedServerText` keys the JSON text by the
message's deterministic protobuf bytes (cheap, done in C) and keeps the recent ones, so the JSON is
built once per audience instead of once per connection. Direct replies (with a client ``id``) and
kinds sent to one connection only are encoded as before.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from ninetynine.gateway.v1 import gateway_service_pb2 as gw

from services.gateway.convert import JsonId, server_text

__all__ = ["SHARED_KINDS", "SharedServerText"]

# Pushed kinds that several connections receive alike.
SHARED_KINDS: Final = frozenset({"event", "view", "room", "snapshot"})


class SharedServerText:
    """A bounded LRU of ``message bytes -> JSON text`` for the pushed kinds in ``SHARED_KINDS``."""

    def __init__(self, max_entries: int = 2048) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be >= 1")
        self.max_entries = max_entries
        self._texts: OrderedDict[bytes, str] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._texts)

    def text(self, msg: gw.ServerMessage, reply_id: JsonId | None) -> str:
        """The frame for ``msg``: equal to ``server_text(msg, reply_id)``, shared when it can be."""
        if reply_id is not None or msg.WhichOneof("kind") not in SHARED_KINDS:
            return server_text(msg, reply_id)
        key = msg.SerializeToString(deterministic=True)
        text = self._texts.get(key)
        if text is not None:
            self._texts.move_to_end(key)
            self.hits += 1
            return text
        self.misses += 1
        text = self._texts[key] = server_text(msg)
        if len(self._texts) > self.max_entries:
            self._texts.popitem(last=False)
        return text
