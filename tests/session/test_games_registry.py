"""The game registry (ninetynine/session/games.py): the session knows the games it hosts only there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ninetynine.session
from ninetynine.common.errors import ServiceError
from ninetynine.engine import trick_wire
from ninetynine.engine.trick import TrickOptions, setup
from ninetynine.engine.trick import apply as trick_apply
from ninetynine.engine.trick import timeout_action as trick_timeout_action
from ninetynine.engine.v1 import state_pb2
from ninetynine.session import games
from ninetynine.session.deadlines import TurnClock
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

SESSION = Path(ninetynine.session.__file__).parent
# A game's rules, decoders and views: what only the registry (and its entries' helpers) may import.
GAME_MODULES = (
    "ninetynine.engine.rules",
    "ninetynine.engine.convert",
    "ninetynine.engine.trick",
)  # trick_wire too
# The registry and the helpers its entries are made of.
ENTRY_MODULES = {"games.py", "bots.py", "rulebook.py", "trickwire.py"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_rooms_seats_deadlines_views_and_results_reach_a_game_only_through_the_registry() -> None:
    """Issue 19: "rooms, seats, deadlines, reconnects, replays and per-player views should know which
    game they host only through a registry"."""
    offending = {
        path.name: sorted(n for n in _imports(path) if n.startswith(GAME_MODULES))
        for path in sorted(SESSION.glob("*.py"))
        if path.name not in ENTRY_MODULES
    }
    assert {name: found for name, found in offending.items() if found} == {}


def test_a_document_from_before_the_registry_hosts_the_adding_game() -> None:
    doc = doc_pb.RoomDocument(room_id="ABCDEF")
    assert games.kind_of(doc) == games.ADDING
    assert games.of(doc) is games.REGISTRY[games.ADDING]


def test_a_kind_no_entry_has_is_refused_as_unknown_game() -> None:
    with pytest.raises(ServiceError) as refused:
        games.entry("chess")
    assert refused.value.reason == "UNKNOWN_GAME"
    assert refused.value.metadata == {"game": "chess"}


def test_each_entry_bounds_its_seats() -> None:
    adding = games.entry("")
    adding.check_seats(2)
    adding.check_seats(10)
    for seats in (1, 11):
        with pytest.raises(ServiceError) as refused:
            adding.check_seats(seats)
        assert refused.value.reason == "INVALID_SEATS"


def _trick_room(bots: tuple[str, ...] = ("p2", "p3")) -> doc_pb.RoomDocument:
    """A trick room in the bidding of its first deal (decisions began at 1 000 ms)."""
    state, _ = setup(["p1", "p2", "p3"], TrickOptions(bid_seconds=60, turn_seconds=30), seed=4, now_ms=1_000)
    doc = doc_pb.RoomDocument(room_id="ABCDEF", game="trick", phase=pb.ROOM_PHASE_PLAYING)
    for pid in ("p1", "p2", "p3"):
        doc.seats.add(player_id=pid, name=pid, bot=pid in bots)
    trick_wire.state_into(state, doc.state.trick)
    return doc


def test_while_bidding_everyone_owes_a_bid_and_the_room_deadline_is_the_earliest() -> None:
    """Issue 19: "the trick game's bidding phase has every player pending at once" — the room's
    deadline is the first due (a bot's think time), clients are shown the people's bid time."""
    doc = _trick_room()
    assert [d.player_id for d in games.of(doc).decisions(doc)] == ["p1", "p2", "p3"]
    TurnClock(bot_think_ms=500, time_scale=1.0).set_deadline(doc, 2_000, force=True)
    assert (doc.deadline_ms, doc.deadline_player_id) == (2_500, "p2")
    assert doc.deadline_kind == doc_pb.DEADLINE_KIND_BOT
    assert doc.shown_deadline_ms == 1_000 + 60_000


def test_the_three_second_rule_shortens_no_shared_bid() -> None:
    """A seat that left keeps the whole bid time: that deadline times out everyone still bidding."""
    doc = _trick_room(bots=())
    doc.seats[0].left = True
    doc.seats[1].consecutive_timeouts = 3
    TurnClock(bot_think_ms=500, time_scale=1.0).set_deadline(doc, 2_000, force=True)
    assert doc.deadline_ms == 61_000 and doc.deadline_kind == doc_pb.DEADLINE_KIND_TURN


def test_an_adding_room_keeps_one_decision_and_no_shown_deadline() -> None:
    doc = doc_pb.RoomDocument(room_id="ABCDEF", phase=pb.ROOM_PHASE_PLAYING)
    doc.seats.add(player_id="p1", name="p1")
    doc.state.current = "p1"
    doc.state.phase = state_pb2.PHASE_PLAYING
    doc.state.turn_started_at_ms = 1_000
    TurnClock(bot_think_ms=500, time_scale=1.0).set_deadline(doc, 2_000, force=True)
    assert (doc.deadline_ms, doc.deadline_player_id, doc.shown_deadline_ms) == (16_000, "p1", 0)


def test_a_bid_is_not_outdated_by_the_others_bids_of_the_same_deal() -> None:
    """The bids are laid in any order: a bid chosen from the bidding's opening view still holds
    after another player's bid, but not once the bidding is over."""
    doc = _trick_room()
    trick = games.of(doc)
    state = trick_wire.state_from_proto(doc.state.trick)
    state, _ = trick_apply(state, "p2", trick_timeout_action(state, "p2"), now_ms=1_500)
    trick_wire.state_into(state, doc.state.trick)
    assert not trick.outdated(doc, 0) and not trick.outdated(doc, 1)
    assert trick.outdated(doc, 2)
