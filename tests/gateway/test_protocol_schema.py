"""The client protocol's JSON Schema against its documentation, the rules engine and the web table.

* Every ```json client / ```json server block of docs/client-protocol.md must validate, every
  ```json invalid block must be refused, and every message and event type needs an example, so the
  page and the schema cannot drift apart.
* Views and events produced by the real rules engine over whole games must validate, so the schema
  cannot drift from what the gateway will forward.
* The web table's demo fixtures are real views, and every test hook the doc lists exists in the UI.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from ninetynine.engine.rules.game import apply, setup, timeout_action
from ninetynine.engine.rules.options import Options
from ninetynine.engine.rules.state import Audience, Event, GameState, Phase
from ninetynine.engine.rules.view import player_view
from tests.gateway.doc_examples import DOC, doc_examples

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "ninetynine" / "gateway" / "schema" / "client-protocol.schema.json"
STATIC = ROOT / "ninetynine" / "gateway" / "static"

SCHEMA: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _validator(ref: str | None = None) -> Draft202012Validator:
    schema = dict(SCHEMA) if ref is None else {**SCHEMA, "oneOf": [{"$ref": f"#/$defs/{ref}"}]}
    return Draft202012Validator(schema)


ANY_MESSAGE = _validator()
CLIENT = _validator("ClientMessage")
SERVER = _validator("ServerMessage")
EVENT = _validator("event")  # single-branch validators keep the whole-game checks fast
VIEW = _validator("view")


EXAMPLES = doc_examples()


def _types_in(union: str) -> set[str]:
    """Message types named by the ``type`` const of each branch of a oneOf union in the schema."""
    names = set()
    for branch in SCHEMA["$defs"][union]["oneOf"]:
        target = SCHEMA["$defs"][branch["$ref"].rsplit("/", 1)[1]]
        props = target.get("properties", {})
        names.add(props["type"]["const"])
    return names


def _errors(validator: Draft202012Validator, message: object) -> list[str]:
    return [e.message for e in validator.iter_errors(message)]


# -- the schema itself and the doc's examples -------------------------------------------------


def test_schema_is_valid_draft_2020_12() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_doc_has_examples_of_every_kind() -> None:
    assert len(EXAMPLES["client"]) >= 12
    assert len(EXAMPLES["server"]) >= 13
    assert len(EXAMPLES["invalid"]) >= 10


@pytest.mark.parametrize("message", EXAMPLES["client"], ids=lambda m: str(m.get("type")))
def test_client_examples_validate(message: dict[str, Any]) -> None:
    assert _errors(CLIENT, message) == []
    assert _errors(ANY_MESSAGE, message) == []
    assert _errors(SERVER, message), "a client message must not also pass as a server message"


@pytest.mark.parametrize("message", EXAMPLES["server"], ids=lambda m: str(m.get("type")))
def test_server_examples_validate(message: dict[str, Any]) -> None:
    assert _errors(SERVER, message) == []
    assert _errors(ANY_MESSAGE, message) == []
    assert _errors(CLIENT, message), "a server message must not also pass as a client message"


@pytest.mark.parametrize("message", EXAMPLES["invalid"], ids=lambda m: str(m.get("type")))
def test_invalid_examples_are_rejected(message: dict[str, Any]) -> None:
    assert _errors(ANY_MESSAGE, message)


def test_every_message_type_has_a_doc_example() -> None:
    client_types = {m["type"] for m in EXAMPLES["client"]}
    server_types = {m["type"] for m in EXAMPLES["server"]}
    assert _types_in("ClientMessage") - client_types == set()
    assert _types_in("ServerMessage") - server_types == set()
    # and the doc shows no message type the schema does not know
    assert client_types <= _types_in("ClientMessage")
    assert server_types <= _types_in("ServerMessage")


def test_every_event_type_has_a_doc_example() -> None:
    shown = {m["event"]["type"] for m in EXAMPLES["server"] if m["type"] == "event"}
    assert _types_in("GameEvent") == shown


def test_doc_lists_the_brief_message_set() -> None:
    assert _types_in("ClientMessage") == {
        "hello", "createRoom", "joinRoom", "spectate", "resume", "listRooms", "addBot",
        "startGame", "leaveRoom", "play", "getReplay", "ping", "rematch", "listRules",
    }  # fmt: skip
    assert _types_in("ServerMessage") == {
        "welcome", "joined", "room", "rooms", "event", "view", "snapshot", "played", "left",
        "replay", "pong", "goodbye", "error", "rulesList",
    }  # fmt: skip


# -- hand-made bad messages -------------------------------------------------------------------

BAD_MESSAGES: list[tuple[str, object]] = [
    ("not an object", ["hello"]),
    ("no type", {"lang": "ko"}),
    ("type not a string", {"type": 7}),
    ("unknown type", {"type": "cheat", "cardId": "N3-1"}),
    ("hello without lang", {"type": "hello"}),
    ("id too long", {"type": "ping", "id": "x" * 65}),
    ("negative id", {"type": "ping", "id": -1}),
    ("float id", {"type": "ping", "id": 1.5}),
    ("seats below 2", {"type": "createRoom", "name": "a", "seats": 1}),
    ("seats as string", {"type": "createRoom", "name": "a", "seats": "4"}),
    ("name of spaces", {"type": "createRoom", "name": "   ", "seats": 4}),
    ("name too long", {"type": "createRoom", "name": "가" * 25, "seats": 4}),
    ("name with control char", {"type": "joinRoom", "roomId": "K7QX2P", "name": "a\u0007b"}),
    ("unknown option key", {"type": "createRoom", "name": "a", "seats": 4, "options": {"speed": 2}}),
    ("switch as bool", {"type": "createRoom", "name": "a", "seats": 4, "options": {"refill": True}}),
    ("lives 4 is not offered", {"type": "createRoom", "name": "a", "seats": 4, "options": {"lives": 4}}),
    ("room id with spaces", {"type": "joinRoom", "roomId": "K7 QX", "name": "a"}),
    ("short token", {"type": "resume", "token": "abc", "afterSeq": 0}),
    ("resume without afterSeq", {"type": "resume", "token": "tA9fQ2mZr8Lw0xY3cV5bN1kJ4hG6dS7e"}),
    ("play without action", {"type": "play", "clientSeq": 1}),
    ("play with unknown card", {"type": "play", "clientSeq": 1, "action": {"cardId": "X9-1"}}),
    ("play dir value", {"type": "play", "clientSeq": 1, "action": {"cardId": "Z-1", "dir": "left"}}),
    ("joker over 99", {"type": "play", "clientSeq": 1, "action": {"cardId": "J-1", "jokerValue": 100}}),
    ("ace 5", {"type": "play", "clientSeq": 1, "action": {"cardId": "AS-1", "aceValue": 5}}),
    ("token on play", {"type": "play", "clientSeq": 1, "token": "t" * 20, "action": {"cardId": "N3-1"}}),
    ("addBot with a field", {"type": "addBot", "count": 3}),
    ("getReplay without room", {"type": "getReplay"}),
    (
        "spectator with a player id",
        {
            "type": "joined",
            "roomId": "R1",
            "playerId": "p1",
            "token": "t" * 20,
            "role": "spectator",
            "host": False,
        },
    ),
    (
        "player without a player id",
        {
            "type": "joined",
            "roomId": "R1",
            "playerId": None,
            "token": "t" * 20,
            "role": "player",
            "host": True,
        },
    ),
    ("snapshot with other reason", {"type": "snapshot", "seq": 3, "reason": "because"}),
    (
        "error metadata not strings",
        {"type": "error", "reason": "X", "message": "m", "metadata": {"a": 1}, "fatal": False},
    ),
    ("error without fatal", {"type": "error", "reason": "OVER_99", "message": "m", "metadata": {}}),
    (
        "welcome of version 2",
        {
            "type": "welcome",
            "protocolVersion": 2,
            "heartbeatSeconds": 20,
            "maxMessageBytes": 4096,
            "lang": "ko",
        },
    ),
    ("event of unknown type", {"type": "event", "seq": 1, "event": {"type": "cardStolen", "player": "p1"}}),
    (
        "event with extra field",
        {"type": "event", "seq": 1, "event": {"type": "reshuffled", "count": 3, "total": 10, "cards": []}},
    ),
    ("played seq 0", {"type": "played", "clientSeq": 1, "seq": 0}),
]


@pytest.mark.parametrize(("why", "message"), BAD_MESSAGES, ids=[b[0] for b in BAD_MESSAGES])
def test_bad_messages_are_rejected(why: str, message: object) -> None:
    assert _errors(ANY_MESSAGE, message), why


def _doc_view() -> dict[str, Any]:
    view = next(m for m in EXAMPLES["server"] if m["type"] == "view" and m["view"]["viewer"])
    copied: dict[str, Any] = json.loads(json.dumps(view))  # a deep copy to spoil
    return copied


def test_view_must_not_carry_half_a_hand() -> None:
    message = _doc_view()
    del message["view"]["legalPlays"]
    assert _errors(SERVER, message)


def test_finished_view_needs_the_seed_and_result() -> None:
    message = _doc_view()
    message["view"]["phase"] = "finished"
    assert _errors(SERVER, message)


def test_playing_view_must_not_reveal_the_seed() -> None:
    message = _doc_view()
    message["view"]["seed"] = "12345"
    assert _errors(SERVER, message)


def test_view_with_another_players_cards_field_is_rejected() -> None:
    message = _doc_view()
    message["view"]["players"][0]["hand"] = []
    assert _errors(SERVER, message)


# -- what the real engine produces -------------------------------------------------------------

GAME_SETUPS: list[tuple[str, dict[str, Any], int]] = [
    ("kr-4p", {}, 4),
    ("kr-2p-lives", {"lives": 2, "onTheBoard": "on"}, 2),
    (
        "kr-3p-reset-clamp-kids",
        {"afterElimination": "reset", "floorAtZero": "clamp", "jokerRange": "0-99"},
        3,
    ),
    ("classic-3p", {"mode": "classic", "lives": 1}, 3),
    ("classic-7p-two-decks", {"mode": "classic", "lives": 0, "aceHigh": 10}, 7),
]


def _play_out(option_map: dict[str, Any], players: int, seed: int) -> Iterator[tuple[GameState, list[Event]]]:
    """Yield (state, events of that step) from setup to the end, moves by the timeout policy."""
    ids = [f"p{i}" for i in range(1, players + 1)]
    names = {p: f"이름{p}" for p in ids}
    now = 1_700_000_000_000
    state, events = setup(ids, Options.from_mapping(option_map), seed=seed, now_ms=now, names=names)
    yield state, events
    for step in range(2000):
        if state.phase is Phase.FINISHED:
            return
        state, events = apply(state, state.current, timeout_action(state), now_ms=now + step * 1000)
        yield state, events
    raise AssertionError("game did not finish")


def _room_event_messages(
    events: list[Event], next_seq: int, viewer: str | None
) -> tuple[list[dict[str, Any]], int]:
    """Number events the way §3 says (every entry its own seq, a redacted twin too) for one viewer."""
    out = []
    seq = next_seq
    for event in events:
        seq += 1
        if event.visible_to(viewer):
            out.append({"type": "event", "seq": seq, "event": event.to_dict()})
    return out, seq


INTERESTING = {"roundStarted", "reshuffled", "lifeLost", "eliminated", "gameFinished", "directionChanged"}


@pytest.mark.parametrize(("label", "option_map", "players"), GAME_SETUPS, ids=[g[0] for g in GAME_SETUPS])
def test_engine_events_and_views_validate(label: str, option_map: dict[str, Any], players: int) -> None:
    """Every event of a whole game for every viewer; views at every 4th step and every eventful one."""
    seen_events: set[str] = set()
    room_seq = 0
    full_log: list[dict[str, Any]] = []
    final: GameState | None = None
    for step, (state, events) in enumerate(_play_out(option_map, players, seed=3)):
        final = state
        check_views = step % 4 == 0 or any(e.type in INTERESTING for e in events)
        first_seq = room_seq
        for viewer in [*state.seats, None]:
            messages, last = _room_event_messages(events, first_seq, viewer)
            for message in messages:
                assert _errors(EVENT, message) == [], (label, message)
                seen_events.add(message["event"]["type"])
            if check_views:
                view = {"type": "view", "seq": last, "view": player_view(state, viewer)}
                assert _errors(VIEW, view) == [], (label, viewer, _errors(VIEW, view)[:3])
        room_seq = last
        everything, _ = _room_event_messages(events, first_seq, "p1")
        full_log += [{"seq": m["seq"], "event": m["event"]} for m in everything]
    assert final is not None and final.phase is Phase.FINISHED
    replay = {
        "type": "replay",
        "roomId": "R1",
        "seed": str(final.seed),
        "players": [{"id": p, "name": final.name(p)} for p in final.seats],
        "events": full_log,
    }
    assert _errors(SERVER, replay) == []
    assert {
        "gameStarted",
        "handDealt",
        "roundStarted",
        "turnStarted",
        "cardPlayed",
        "gameFinished",
    } <= seen_events


def test_event_seqs_numbered_as_documented_are_increasing_for_every_viewer() -> None:
    """The §3 numbering gives each viewer a strictly increasing stream; each sees one of two twins."""
    room_seq = 0
    per_viewer: dict[str | None, list[int]] = {}
    for state, events in _play_out({}, 3, 5):
        start = room_seq
        for viewer in [*state.seats, None]:
            messages, room_seq = _room_event_messages(events, start, viewer)
            per_viewer.setdefault(viewer, []).extend(m["seq"] for m in messages)
    for viewer, seqs in per_viewer.items():
        assert seqs == sorted(set(seqs)), viewer
    # a private event and its redacted twin: consecutive entries, every seated viewer gets exactly one
    for state, events in _play_out({}, 3, 5):
        for private, twin in itertools.pairwise(events):
            if private.audience is Audience.ONLY and twin.audience is Audience.EXCEPT:
                for viewer in state.seats:
                    assert private.visible_to(viewer) != twin.visible_to(viewer), (viewer, private.type)
    # the spectator gets every event all players get, and nothing no player gets
    players = [set(seqs) for viewer, seqs in per_viewer.items() if viewer is not None]
    assert set.intersection(*players) <= set(per_viewer[None]) <= set.union(*players)


# -- the web table -----------------------------------------------------------------------------


def test_demo_fixtures_are_valid_server_messages() -> None:
    """The demo mode renders these without a server; views among them are real engine output."""
    fixtures = sorted((STATIC / "demo").glob("*.json"))
    assert {"view-table.json", "view-finished.json", "replay.json", "rooms.json"} <= {
        p.name for p in fixtures
    }
    for path in fixtures:
        message = json.loads(path.read_text(encoding="utf-8"))
        assert _errors(SERVER, message) == [], path.name


def test_every_documented_test_hook_exists_in_the_web_table() -> None:
    doc = DOC.read_text(encoding="utf-8")
    hooks_section = doc.split("## 8. Test hooks", 1)[1]
    hooks = set(re.findall(r'data-testid="([A-Za-z0-9-]+)"', hooks_section))
    hooks |= set(re.findall(r"`(opt-[A-Za-z]+)`", hooks_section))
    ids = set(re.findall(r"`#([a-z-]+)`", hooks_section))
    ui = "".join(p.read_text(encoding="utf-8") for p in STATIC.rglob("*") if p.suffix in {".html", ".js"})
    assert len(hooks) >= 40
    missing = sorted(h for h in hooks if f'"{h}"' not in ui and f"'{h}'" not in ui and f"`{h}`" not in ui)
    assert missing == []
    assert sorted(i for i in ids if f'id="{i}"' not in ui) == []


def test_web_table_loads_nothing_from_outside() -> None:
    for path in STATIC.rglob("*"):
        if path.suffix in {".html", ".js", ".css"}:
            text = path.read_text(encoding="utf-8")
            assert not re.search(r"""(src|href)=["']https?://""", text), path.name
            assert not re.search(r"""(import|from)\s*\(?\s*["']https?://""", text), path.name
            assert "@import url(http" not in text, path.name
