"""Record the gateway's golden corpus: server messages and the exact frames the encoder writes.

    python -m tests.gateway.golden.record        # writes tests/gateway/golden/corpus.jsonl.gz

Server side: whole games played by the rules engine, wrapped as the session and the gateway wrap
them (:func:`tests.gateway.games.game_messages`): both modes, 2 to 10 players, every value of every
option of ``CHOICES`` at least once, every event kind and enum value, every seat's view, the
spectator's and the finished ones, rooms in every phase, room lists, replays, and the
connection-level kinds (welcome, joined as player and spectator, snapshot, left, pong, goodbye,
errors); beyond the first two games, one view in nine and the finished
ones. Each message is kept with the reply id it was encoded with (none, strings, integers up
to and beyond 64 bits) and the frame ``server_bytes`` wrote.

Client side: every client frame of docs/client-protocol.md and one per option value and choice
shape, each kept with the ``ClientMessage`` ``client_from_json`` made of it.

Every input is a pure function of the game numbers; recording again gives the same file. Re-record
only for an intended change of the protocol, as a reviewed change of its own.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ninetynine.engine.convert import options_to_proto
from ninetynine.engine.rules import Options
from ninetynine.engine.rules.options import CHOICES, CLASSIC, KR
from ninetynine.engine.trick import TrickOptions
from ninetynine.gateway.convert import JsonId, client_from_json, server_bytes
from ninetynine.gateway.protocol import parse_text
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session import rulebook
from ninetynine.session.v1 import session_service_pb2 as spb
from tests.gateway.doc_examples import doc_examples
from tests.gateway.games import game_messages, trick_messages

CORPUS_PATH = Path(__file__).resolve().parent / "corpus.jsonl.gz"
REPLY_IDS: tuple[JsonId | None, ...] = (
    None,
    None,
    None,
    "req-1",
    '요청 "7"\n',
    0,
    7,
    2**53 - 1,
    2**64,
    10**30,
)


def option_variants() -> Iterator[Options]:
    """Both modes, then each value of each option once (in the mode that allows it)."""
    yield Options()
    yield Options(mode=CLASSIC)
    for attr, (_key, values) in CHOICES.items():
        if attr == "mode":
            continue
        for value in values:
            for mode in (KR, CLASSIC):
                try:
                    yield Options(mode=mode, **{attr: value})  # type: ignore[arg-type]
                except Exception:  # noqa: BLE001 - a value this mode refuses is simply skipped
                    continue
                break
    # Lives with "on the board": a second loss there eliminates (reason lostOnTheBoard).
    yield Options(mode=CLASSIC, lives=1, on_the_board=True)
    yield Options(mode=KR, lives=1, on_the_board=True, after_elimination="reset")


def server_messages() -> Iterator[gw.ServerMessage]:
    """Real games under every option variant, then the kinds games alone do not show."""
    for n, options in enumerate(option_variants()):
        players = 2 + n % 9
        # Seeds above 2**63 in every other game: the revealed seed is a uint64 no int64 could hold.
        seed = n * 7919 + (2**63 if n % 2 else 0)
        for i, msg in enumerate(game_messages(seed, players, options)):
            # The first two games whole; of the others every event and reply, and one view in
            # nine plus the finished ones (a view repeats the state's fields seat after seat).
            if n < 2 or msg.WhichOneof("kind") != "view" or i % 9 == 0 or msg.view.view.result.ranking:
                yield msg
    # Trick matches: one whole, one with trumps by contracts and play on at ties (one view in nine).
    for n, trick_options in enumerate(
        (TrickOptions(max_deals=9), TrickOptions(trumps="byContracts", ties="playOn", max_deals=9))
    ):
        for i, msg in enumerate(trick_messages(n * 104_729 + 2**63 * n, trick_options)):
            if n == 0 or msg.WhichOneof("kind") != "view" or i % 9 == 0 or msg.view.trick.result.ranking:
                yield msg
    yield gw.ServerMessage(
        welcome=gw.Welcome(protocol_version=1, heartbeat_seconds=20, max_message_bytes=65536, lang="en")
    )
    yield gw.ServerMessage(joined=gw.Joined(room_id="R1", player_id="", token="s9ec", role="spectator"))
    yield gw.ServerMessage(joined=gw.Joined(room_id="R1", player_id="p2", token="t2", role="player"))
    lobby = spb.Room(
        room_id="R2",
        phase=spb.ROOM_PHASE_LOBBY,
        host_player_id="p1",
        max_seats=6,
        options=options_to_proto(Options(mode=CLASSIC, lives=2)),
        created_at_ms=1_767_000_000_000,
    )
    lobby.seats.add(player_id="p1", name="", host=True, connected=False)
    lobby.seats.add(player_id="b1", name="봇 1", bot=True, connected=True)
    yield gw.ServerMessage(room=gw.RoomUpdate(room=lobby))
    orphan = spb.Room(room_id="R3", phase=spb.ROOM_PHASE_LOBBY, host_player_id="gone", max_seats=2)
    presets = list(rulebook.list_rules().presets)
    preset_room = spb.Room(room_id="R4", phase=spb.ROOM_PHASE_LOBBY, host_player_id="p1", max_seats=3)
    preset_room.seats.add(player_id="p1", name="Sam", host=True, connected=True)
    preset_room.rules.CopyFrom(rulebook.room_rules("na-online", {"tokens": "3"}, preset_room.options))
    yield gw.ServerMessage(room=gw.RoomUpdate(room=preset_room))
    yield gw.ServerMessage(rooms=gw.RoomList(rooms=[lobby, orphan, preset_room]))
    yield gw.ServerMessage(rules_list=gw.RulesList(presets=presets))
    yield gw.ServerMessage(rooms=gw.RoomList())
    for reason in ("idle", "slowClient", "abuse"):
        yield gw.ServerMessage(goodbye=gw.Goodbye(reason=reason))
    yield gw.ServerMessage(error=gw.Error(reason="RATE_LIMITED", message="Too many messages; slow down"))
    yield gw.ServerMessage(
        error=gw.Error(
            reason="MESSAGE_TOO_LARGE", message="메시지가 너무 커요", metadata={"limit": "4096"}, fatal=True
        )
    )


def client_frames() -> Iterator[dict[str, Any]]:
    """The document's client examples, then every option value and choice shape."""
    yield from doc_examples()["client"]
    yield {"type": "hello", "lang": "ko"}
    yield {"type": "hello", "lang": "en", "client": "ios 3.2"}
    for key, values in CHOICES.values():
        for value in values:
            json_value = ("on" if value else "off") if isinstance(value, bool) else value
            yield {
                "type": "createRoom",
                "id": f"c-{key}",
                "name": "민준",
                "seats": 4,
                "options": {key: json_value},
            }
    yield {
        "type": "createRoom",
        "name": "x",
        "seats": 2,
        "options": {"handSize": 4, "refill": "off", "lives": 1},
    }
    yield {"type": "createRoom", "name": "x", "seats": 10}
    for name in ("joinRoom", "spectate", "getReplay"):
        yield {"type": name, "roomId": "R1", **({"name": "서연"} if name == "joinRoom" else {})}
    yield {"type": "resume", "token": "t0k3n-0123456789abcdef", "afterSeq": 0}
    yield {"type": "resume", "id": 3, "token": "t0k3n-0123456789abcdef", "afterSeq": 2**40}
    for name in ("listRooms", "listRules", "addBot", "startGame", "leaveRoom", "ping"):
        yield {"type": name}
    actions: list[dict[str, Any]] = [
        {"cardId": "N7-3"},
        {"cardId": "PM9-1", "sign": "+"},
        {"cardId": "PM10-2", "sign": "-"},
        {"cardId": "AS-1", "aceValue": 1},
        {"cardId": "AH-2", "aceValue": 11},
        {"cardId": "J-1", "jokerValue": 0},
        {"cardId": "J-2", "jokerValue": 99},
        {"cardId": "Z-1", "dir": "keep"},
        {"cardId": "Z-2", "dir": "reverse"},
    ]
    for n, action in enumerate(actions):
        yield {"type": "play", "id": f"p{n}", "clientSeq": n + 1, "action": action}
        yield {"type": "play", "clientSeq": n + 1, "moveSeq": n * 3, "action": action}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def records() -> Iterator[dict[str, Any]]:
    for n, msg in enumerate(server_messages()):
        reply_id = REPLY_IDS[n % len(REPLY_IDS)]
        frame = server_bytes(msg, reply_id)
        yield {"server": b64(msg.SerializeToString()), "id": reply_id, "frame": frame.decode("utf-8")}
    for raw in client_frames():
        text = json.dumps(raw, ensure_ascii=False)
        parsed, _ = parse_text(text)  # the frame passes the schema, as on the real path
        assert parsed == client_from_json(raw)
        yield {"client": text, "message": b64(parsed.SerializeToString())}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=CORPUS_PATH)
    args = parser.parse_args()
    lines = [json.dumps(r, ensure_ascii=True, separators=(",", ":")) for r in records()]
    data = ("\n".join(lines) + "\n").encode("ascii")
    # mtime=0: the same records give the same file.
    args.out.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{len(lines)} records, {len(data)} bytes, {args.out.stat().st_size} compressed -> {args.out}")


if __name__ == "__main__":
    main()
