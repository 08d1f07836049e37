"""The game registry (ninetynine/session/games.py): the session knows the games it hosts only there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ninetynine.session
from ninetynine.common.errors import ServiceError
from ninetynine.session import games
from ninetynine.session.v1 import room_document_pb2 as doc_pb

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
