"""Golden replay: every call of the recorded corpus, sent again to today's engine, gets the same answer.

The corpus (``corpus.jsonl.gz``; README.md and :mod:`tests.engine.golden.corpus`) holds complete
games recorded from the engine over the wire: both modes, every option value, 2 to 10 players,
timeouts, views for players and spectators, refusals of every kind. Each recorded request is sent
again as recorded, and the response bytes must equal the recorded ones byte for byte; a refusal
must carry the same status code, ErrorInfo reason, domain and metadata, and the same message in
Korean and in English. A mismatch names the game, the call and its move (seq), the first
differing field, and shows the text-format diff of the two responses.

Which path: the whole corpus goes through the engine server's own request handling in this
process (:class:`~tests.engine.golden.corpus.InProcessEngine`: the method table the server
registers, i.e. the request deserializer, the servicer, the response serializer, and ``abort``
for refusals; the same bytes in and out as on the socket, without grpc's transport, which costs
three times the engine's own work). Every ninth game also goes over the wire, to a real engine
server of this checkout (``ninety-nine engine --port 0``, the ``engine`` fixture of
tests/engine/conftest.py), so both paths are held to the same recorded answers. About 14 s of CPU
in all (27 s of wall time on the shared two-core machine at a load average of 9). The last tests
change recorded answers in memory and check that the replay reports each change where it is.
"""

from __future__ import annotations

import copy
import gzip
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from ninetynine.engine.v1 import engine_service_pb2 as pb
from tests.engine.golden.corpus import (
    CORPUS_PATH,
    FORMAT,
    RESPONSE_TYPES,
    Game,
    InProcessEngine,
    Mismatch,
    RawEngine,
    b64,
    read_corpus,
    replay,
    unb64,
)
from tests.engine.golden.record import coverage
from tests.engine.service_fixtures import RunningEngine


def _header() -> dict[str, Any]:
    with gzip.open(CORPUS_PATH, "rt", encoding="utf-8") as lines:
        header: dict[str, Any] = json.loads(next(lines))
    return header


HEADER = _header()  # the first line only: collection stays fast


@pytest.fixture(scope="module")
def games() -> list[Game]:
    header, games = read_corpus()
    assert header == HEADER
    return games


@pytest.fixture(scope="module")
def raw(engine: RunningEngine) -> Iterator[RawEngine]:
    client = RawEngine(engine.target)
    try:
        yield client
    finally:
        client.close()


def _report(mismatches: list[Mismatch], limit: int = 3) -> str:
    shown = "\n\n".join(m.text for m in mismatches[:limit])
    more = f"\n\n... and {len(mismatches) - limit} more calls differ" if len(mismatches) > limit else ""
    return f"{len(mismatches)} call(s) differ from the golden corpus:\n\n{shown}{more}"


@pytest.fixture(scope="module")
def in_process() -> InProcessEngine:
    return InProcessEngine()


@pytest.fixture(scope="module")
def replayed(in_process: InProcessEngine, games: list[Game]) -> dict[int, list[Mismatch]]:
    """The whole corpus replayed in one go, mismatches by game."""
    by_game: dict[int, list[Mismatch]] = {g.game: [] for g in games}
    for mismatch in replay(in_process, games):
        by_game[mismatch.game].append(mismatch)
    return by_game


@pytest.mark.parametrize("number", range(HEADER["games"]), ids=lambda n: f"game-{n:03d}")
def test_replay_gives_the_recorded_answers(replayed: dict[int, list[Mismatch]], number: int) -> None:
    if replayed[number]:
        pytest.fail(_report(replayed[number]), pytrace=False)


WIRE_SAMPLE = slice(None, None, 9)  # odd: both modes (they alternate)


def test_the_wire_gives_the_recorded_answers(raw: RawEngine, games: list[Game]) -> None:
    sample = games[WIRE_SAMPLE]
    assert {g.info["mode"] for g in sample} == {"kr-product", "classic"}
    mismatches = replay(raw, sample)
    if mismatches:
        pytest.fail(_report(mismatches), pytrace=False)


def test_the_corpus_is_what_its_header_says(games: list[Game]) -> None:
    assert HEADER["format"] == FORMAT
    assert re.fullmatch(r"[0-9a-f]{40}", HEADER["commit"]), "recorded from a commit"
    assert HEADER["dirty"] is False, "recorded from a clean checkout"
    assert isinstance(HEADER["recorderVersion"], int)
    assert [g.game for g in games] == list(range(HEADER["games"]))
    assert sum(len(g.calls) for g in games) == HEADER["calls"]
    assert sorted({g.info["players"] for g in games}) == HEADER["playerCounts"] == list(range(2, 11))
    assert coverage(games) == HEADER["coverage"]
    for mode in ("kr-product", "classic"):
        options = HEADER["coverage"][mode]
        assert options["mode"] == [mode]
        assert all(len(values) >= 2 for key, values in options.items() if key != "mode"), options
    refusals = {c["err"]["reason"] for g in games for c in g.calls if "err" in c}
    assert refusals == set(HEADER["refusals"])
    assert {"OVER_99", "NOT_YOUR_TURN", "STALE_STATE", "INVALID_STATE", "MALFORMED_REQUEST"} <= refusals
    methods = {c["m"] for g in games for c in g.calls if "ok" in c}
    assert methods == set(RESPONSE_TYPES)


def _map_fields(descriptor: Any, seen: set[str]) -> Iterator[str]:
    """The map fields reachable from a message descriptor, by full name."""
    if descriptor.full_name in seen:
        return
    seen.add(descriptor.full_name)
    for field in descriptor.fields:
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            yield f"{descriptor.full_name}.{field.name}"
        else:
            yield from _map_fields(field.message_type, seen)


def test_responses_have_no_map_fields() -> None:
    # Their bytes are compared: a map's serialized order is not promised, so a map field in a
    # response means comparing parsed messages (or deterministic serialization) instead.
    seen: set[str] = set()
    found = [name for t in RESPONSE_TYPES.values() for name in _map_fields(t.DESCRIPTOR, seen)]
    assert found == []
    # The search does find them: a request's maps (requests are replayed as recorded, not compared).
    assert list(_map_fields(pb.SetupRequest.DESCRIPTOR, set())) == [
        "ninetynine.engine.v1.SetupRequest.display_names",
        "ninetynine.engine.v1.SetupRequest.overrides",
    ]


# -- the replay notices a change -----------------------------------------------------------------


def _first(game: Game, method: str, kind: str = "ok") -> int:
    return next(i for i, c in enumerate(game.calls) if c["m"] == method and kind in c)


def test_a_changed_field_is_reported_with_the_game_the_call_and_the_field(
    in_process: InProcessEngine, games: list[Game]
) -> None:
    game = copy.deepcopy(games[0])
    index = _first(game, "View")
    response = pb.ViewResponse.FromString(unb64(game.calls[index]["ok"]))
    real = response.view.round
    response.view.round += 1
    game.calls[index]["ok"] = b64(response.SerializeToString())

    mismatches = replay(in_process, [game])

    assert [(m.game, m.index) for m in mismatches] == [(game.game, index)]
    text = mismatches[0].text
    assert f"{game.label}, call {index} (View at seq " in text
    assert f"first difference: view.round: recorded {real + 1} != now {real}" in text
    assert f"-  round: {real + 1}" in text and f"+  round: {real}" in text


def test_a_flipped_byte_is_reported(in_process: InProcessEngine, games: list[Game]) -> None:
    game = copy.deepcopy(games[1])
    index = _first(game, "Apply")
    data = bytearray(unb64(game.calls[index]["ok"]))
    data[-1] ^= 0x01  # in the last event: the next request's state (field 1) is untouched
    game.calls[index]["ok"] = b64(bytes(data))

    mismatches = replay(in_process, [game])

    assert [(m.game, m.index) for m in mismatches] == [(game.game, index)]
    assert "response bytes differ" in mismatches[0].text


def _a_refusal_with_metadata(games: list[Game]) -> tuple[Game, int]:
    for game in games:
        for index, call in enumerate(game.calls):
            if "err" in call and call["err"]["metadata"]:
                return copy.deepcopy(game), index
    raise AssertionError("no refusal with metadata in the corpus")


def test_a_changed_refusal_metadata_is_reported(raw: RawEngine, games: list[Game]) -> None:
    game, index = _a_refusal_with_metadata(games)
    metadata = game.calls[index]["err"]["metadata"]
    key = next(iter(metadata))
    metadata[key] += "?"

    mismatches = replay(raw, [game])

    assert [(m.game, m.index) for m in mismatches] == [(game.game, index)]
    assert "refusal differs" in mismatches[0].text
    assert f"metadata: recorded {metadata!r}" in mismatches[0].text
    assert "message: recorded" not in mismatches[0].text


def test_a_changed_english_message_is_reported(in_process: InProcessEngine, games: list[Game]) -> None:
    game, index = _a_refusal_with_metadata(games)
    messages = game.calls[index]["err"]["message"]
    messages["en"] += "!"

    mismatches = replay(in_process, [game])

    assert [(m.game, m.index) for m in mismatches] == [(game.game, index)]
    text = mismatches[0].text
    assert "accept-language en: refusal differs" in text
    assert f"message: recorded {messages['en']!r}, now {messages['en'][:-1]!r}" in text
