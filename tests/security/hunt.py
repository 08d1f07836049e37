"""Secret hunting: what a reader must not see, from the session's own store, searched for in the raw
bytes or text of every message that reader gets.

The authority is the room in the store: its document (the engine state: every card of the game,
the seed and the RNG state while the game runs; the token hashes) and its full event log (every
audience). From the log, the hunt knows for every room seq which cards were played face up and
which were dealt or drawn to whom. A message at room seq ``s`` read by seat ``p`` may name only
cards played by ``s`` or held by ``p`` by ``s``; a spectator's (or an unbound reader's) only the
played ones. A seat that left a running game (its token revoked, the seat auto-played) keeps what
it held but learns nothing new: no card dealt or drawn to the seat from its ``playerLeft`` on.
None may name the seed or an RNG state before ``gameFinished``, nor ever a token that is not the
reader's own, nor any token hash. A message without a room seq (room updates, lists, replies) is
judged at the room's last seq when it was read.

Cards are searched as the channels encode them: JSON text (and protobuf rendered as JSON) is cut
into runs of ``[A-Za-z0-9_-]`` (a card id is one whole run: ``N10-1`` is not found in ``N10-12``)
and protobuf bytes are searched for the id as a length-delimited string. Seeds are searched as
decimal runs and as varint and fixed64 bytes. Card ids come from the game's own state, so a mode
with other card ids needs no change here.
"""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ninetynine.session.store import open_store
from ninetynine.session.store.base import RoomStore
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

RUN = re.compile(r"[A-Za-z0-9_-]+")
NEVER = 1 << 62


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


@dataclass
class Reader:
    """Whoever reads a channel: a seat (``player_id``) or a spectator / anonymous caller (None).

    ``tokens`` are the reader's own (it may see them); ``channel`` names the channel for the
    report and the per-channel counts.
    """

    name: str
    channel: str
    player_id: str | None = None
    tokens: set[str] = field(default_factory=set)


@dataclass
class Seen:
    reader: Reader
    raw: bytes | str
    text: str
    seq: int


class Hunt:
    """The store of one room, followed as the game goes, and the checks against it."""

    def __init__(self, store_url: str) -> None:
        self.store: RoomStore = open_store(store_url)
        self.room_id = ""
        self.max_seq = 0
        self.deck: set[str] = set()
        self.public: dict[str, int] = {}
        self.held: dict[str, dict[str, int]] = {}
        self.left: dict[str, int] = {}
        self.batch_start = 1  # what one move reveals is known from its first event on
        self.finished_at = NEVER
        self.words: set[int] = set()  # the seed and every RNG state seen while the game ran
        self.tokens: set[str] = set()
        self.hashes: set[bytes] = set()
        self.checked: Counter[str] = Counter()
        self.seen: list[Seen] = []

    async def close(self) -> None:
        await self.store.close()

    def token(self, token: str) -> str:
        """Registers a token somebody was given (their secret from now on for everyone else)."""
        if token:
            self.tokens.add(token)
        return token

    async def refresh(self) -> None:
        if not self.room_id:
            return
        record = await self.store.load_room(self.room_id)
        assert record is not None, self.room_id
        doc = doc_pb.RoomDocument.FromString(record.data)
        self.hashes |= {s.token_hash for s in doc.seats if s.token_hash}
        self.hashes |= set(doc.spectator_token_hashes)
        while True:
            events = await self.store.read_events(self.room_id, self.max_seq, 1000)
            if not events:
                break
            for stored in events:
                self._learn(stored.seq, pb.RoomEvent.FromString(stored.payload))
                self.max_seq = stored.seq
        if doc.HasField("state"):
            state = doc.state
            self.deck |= {c for p in state.seats for c in p.hand} | set(state.draw_pile) | set(state.discard)
            if self.finished_at == NEVER:
                self.words |= {state.seed, state.rng.state}

    def _learn(self, seq: int, event: pb.RoomEvent) -> None:
        at = self.batch_start
        self.batch_start = seq + 1 if event.batch_end else at
        kind = event.WhichOneof("kind")
        if kind == "player_left" and event.player_left.auto_played:
            self.left.setdefault(event.player_left.player_id, at)
        if kind != "game":
            return
        game = event.game
        payload = game.WhichOneof("payload")
        if payload == "card_played":
            self.public.setdefault(game.card_played.action.card_id, at)
        elif payload == "hand_dealt":
            mine = self.held.setdefault(game.hand_dealt.player_id, {})
            for card in game.hand_dealt.cards:
                mine.setdefault(card.id, at)
        elif payload == "card_drawn" and game.card_drawn.HasField("card"):
            self.held.setdefault(game.card_drawn.player_id, {}).setdefault(game.card_drawn.card.id, at)
        elif payload == "game_finished":
            self.finished_at = min(self.finished_at, at)

    def identity(self, reader: Reader, seq: int) -> str | None:
        if reader.player_id is None or seq >= self.left.get(reader.player_id, NEVER):
            return None
        return reader.player_id

    def hidden_cards(self, reader: Reader, seq: int) -> set[str]:
        if seq >= self.finished_at:
            return set()  # the game is over: the replay shows every hand
        known = {c for c, at in self.public.items() if at <= seq}
        if reader.player_id is not None:
            # What a seat held it may see again; after it left, nothing it gets from then on.
            until = min(seq, self.left.get(reader.player_id, NEVER) - 1)
            known |= {c for c, at in self.held.get(reader.player_id, {}).items() if at <= until}
        return self.deck - known

    async def check(self, reader: Reader, raw: bytes | str, text: str, seq: int | None) -> None:
        """Fails when this message (``raw`` as received, ``text`` its JSON form) shows a secret."""
        if seq is not None and seq > self.max_seq:
            await self.refresh()
        at = self.max_seq if seq is None else seq
        leaks = self.leaks(reader, raw, text, at)
        if leaks and seq is None:
            # Judged at the last seq known; the room may have moved on since (a finished game's
            # replay): judge it again at the seq the room has now.
            await self.refresh()
            at = self.max_seq
            leaks = self.leaks(reader, raw, text, at)
        self.seen.append(Seen(reader, raw, text, at))
        self.checked[reader.channel] += 1
        assert not leaks, (
            f"{reader.name} ({reader.channel}, seat {self.identity(reader, at)}) reads {sorted(leaks)} "
            f"at room seq {at} (game over at {self.finished_at}): {text[:600]}"
        )

    def leaks(self, reader: Reader, raw: bytes | str, text: str, seq: int) -> set[str]:
        cards = self.hidden_cards(reader, seq)
        words = self.words if seq < self.finished_at else set()
        secrets = [t.partition(".")[2] for t in self.tokens - reader.tokens]
        runs = set(RUN.findall(text))
        found = {f"card {c}" for c in cards & runs}
        found |= {f"seed/rng {w}" for w in words if str(w) in runs}
        found |= {f"token {s[:8]}…" for s in secrets if s in text}
        for digest in self.hashes:
            if digest.hex() in text or base64.b64encode(digest).decode() in text:
                found.add(f"token hash {digest.hex()[:8]}…")
        if isinstance(raw, bytes):
            found |= {f"card {c} (bytes)" for c in cards if bytes([len(c)]) + c.encode() in raw}
            for w in words:
                forms = (varint(w), w.to_bytes(8, "little"), w.to_bytes(8, "big"))
                if any(f in raw for f in forms):
                    found.add(f"seed/rng {w} (bytes)")
            found |= {f"token {s[:8]}… (bytes)" for s in secrets if s.encode() in raw}
            found |= {f"token hash {d.hex()[:8]}… (bytes)" for d in self.hashes if d in raw}
        return found

    def recheck_tokens(self) -> None:
        """Every message again, now that every token handed out is known (one may have been
        created after a message that carried it was checked)."""
        for seen in self.seen:
            leaks = {x for x in self.leaks(seen.reader, seen.raw, seen.text, seen.seq) if "token" in x}
            assert not leaks, f"{seen.reader.name} ({seen.reader.channel}) reads {leaks}: {seen.text[:600]}"

    def in_logs(self, lines: Iterable[dict[str, object]]) -> list[str]:
        """Log lines (as JSON) that name any token's secret part or hash."""
        secrets = [t.partition(".")[2] for t in self.tokens]
        hexes = [d.hex() for d in self.hashes]
        bad = []
        for line in lines:
            text = json.dumps(line, ensure_ascii=False)
            if any(s in text for s in secrets) or any(h in text for h in hexes):
                bad.append(text[:400])
        return bad
