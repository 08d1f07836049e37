"""Whole games through the real engine service, the way the session service will drive it."""

from __future__ import annotations

import hashlib

import pytest

from ninetynine.engine.client import EngineClient
from ninetynine.engine.rules import setup
from ninetynine.engine.v1 import events_pb2, game_pb2, state_pb2
from tests.engine.service_fixtures import RunningEngine

PLAYERS = ["ann", "bob", "cho", "dan"]


async def _play_to_end(
    engine: EngineClient, state: state_pb2.State, *, use_timeout_every: int = 0
) -> tuple[state_pb2.State, list[events_pb2.Event], int]:
    events: list[events_pb2.Event] = []
    moves = 0
    while state.phase == state_pb2.PHASE_PLAYING:
        assert moves < 2000, "game does not end"
        if use_timeout_every and moves % use_timeout_every == 0:
            timed = await engine.timeout(state, expected_seq=state.seq, now_ms=1_000 + moves)
            assert timed.player_id == state.current
            state = timed.state
            events += timed.events
        else:
            view = (await engine.view(state, state.current)).view
            assert view.my_turn and view.legal_plays, "the current player always has a legal play"
            # Every hand card the view lists is really in the player's hand, with its choices.
            seat = next(p for p in state.seats if p.id == state.current)
            assert [c.card.id for c in view.hand] == list(seat.hand)
            play = view.legal_plays[0]
            applied = await engine.apply(
                state, state.current, play.action, expected_seq=state.seq, now_ms=1_000 + moves
            )
            assert applied.state.seq == state.seq + 1
            played = [e.card_played for e in applied.events if e.WhichOneof("payload") == "card_played"]
            assert played[0].total == play.result_total
            state = applied.state
            events += applied.events
        moves += 1
    return state, events, moves


@pytest.mark.parametrize(
    "options",
    [
        game_pb2.Options(),  # all unset: kr-product with every default
        game_pb2.Options(mode=game_pb2.MODE_CLASSIC, lives=2, on_the_board=True),
        game_pb2.Options(after_elimination=game_pb2.AFTER_ELIMINATION_RESET, hand_size=3),
    ],
    ids=["kr-default", "classic-lives", "kr-reset"],
)
async def test_full_game_through_the_rpcs(engine: RunningEngine, options: game_pb2.Options) -> None:
    mode = "classic" if options.mode == game_pb2.MODE_CLASSIC else "kr-product"
    setups_before = engine.metric("ninetynine_engine_games_setup_total", mode=mode)
    finished_before = engine.metric("ninetynine_engine_games_finished_total", mode=mode)
    async with EngineClient(engine.target) as client:
        started = await client.setup(PLAYERS, options, seed=99, now_ms=1_000)
        assert started.seed_commitment == hashlib.sha256((99).to_bytes(8, "big")).hexdigest()
        first = started.events[0]
        assert first.WhichOneof("payload") == "game_started"
        assert list(first.game_started.seats) == PLAYERS
        dealt = [e for e in started.events if e.WhichOneof("payload") == "hand_dealt"]
        assert {e.player_id for e in dealt} == set(PLAYERS)
        assert all(e.audience == events_pb2.AUDIENCE_ONLY for e in dealt)
        if options == game_pb2.Options():
            # The same deal as the rules library makes in-process: the service adds nothing of its own.
            local, _ = setup(PLAYERS, seed=99)
            assert [list(p.hand) for p in started.state.seats] == [local.hands[p] for p in PLAYERS]

        # Spectators see no hand and no seed before the end.
        spectator = (await client.view(started.state)).view
        assert not spectator.hand and not spectator.HasField("seed") and not spectator.legal_plays

        final, events, _moves = await _play_to_end(client, started.state, use_timeout_every=5)
        kinds = {e.WhichOneof("payload") for e in events}
        assert {"card_played", "turn_started", "eliminated", "game_finished"} <= kinds
        finished = [e.game_finished for e in events if e.WhichOneof("payload") == "game_finished"]
        assert len(finished) == 1 and finished[0].seed == 99

        end = (await client.view(final, "ann")).view
        assert end.phase == state_pb2.PHASE_FINISHED
        assert end.seed == 99
        assert list(end.result.winner) == [final.current]
        assert [r.rank for r in end.result.ranking] == [1, 2, 3, 4]
        assert end.result.ranking[0].player_id == final.current
        assert not end.legal_plays

    assert engine.metric("ninetynine_engine_games_setup_total", mode=mode) == setups_before + 1
    assert engine.metric("ninetynine_engine_games_finished_total", mode=mode) == finished_before + 1
    assert engine.metric("ninetynine_engine_moves_applied_total", mode=mode, source="timeout") >= 1
    assert engine.metric("ninetynine_engine_moves_applied_total", mode=mode, source="player") >= 1


async def test_view_lists_refused_choices_with_reason_in_the_callers_language(engine: RunningEngine) -> None:
    # Play until someone holds a card with a refused choice, then check its reason texts.
    async with EngineClient(engine.target) as ko, EngineClient(engine.target, lang="en") as en:
        state = (await ko.setup(PLAYERS, seed=5, now_ms=1)).state
        for _ in range(200):
            view = (await ko.view(state, state.current)).view
            refused = [c for card in view.hand for c in card.choices if not c.legal]
            if refused:
                choice = refused[0]
                assert choice.reason in {"OVER_99", "BELOW_ZERO"}
                assert choice.reason_message.endswith("요")  # Korean by default
                english = (await en.view(state, state.current)).view
                same = next(c for card in english.hand for c in card.choices if not c.legal)
                assert same.reason == choice.reason and "total" in same.reason_message
                return
            state = (await ko.timeout(state)).state
            assert state.phase == state_pb2.PHASE_PLAYING
    pytest.fail("no refused choice in 200 moves")
