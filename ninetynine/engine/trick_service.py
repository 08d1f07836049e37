"""Setup / Apply / View / Timeout of the trick game, request message in, response out.

What :class:`ninetynine.engine.handlers.EngineHandlers` does for the adding game, for a trick
match (``SetupRequest.game = "trick"``, ``State.trick``), and reached through the game registry
(:mod:`ninetynine.engine.games`): convert the state once (:mod:`ninetynine.engine.trick_wire`,
bounded and validated), run the pure rules (:mod:`ninetynine.engine.trick`), write the response.
A refusal raises the :class:`~ninetynine.common.errors.ServiceError` the engine sends (one
``ErrorInfo``, Korean and English texts); nothing is computed on a refused request.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ninetynine.common.errors import Lang, ServiceError
from ninetynine.engine import trick, trick_wire
from ninetynine.engine.errors import ENGINE_DOMAIN, from_trick_error
from ninetynine.engine.rules.errors import Reason
from ninetynine.engine.rules.validate import MAX_SEQ, MAX_TURN_START_MS
from ninetynine.engine.trick import TrickError, TrickState
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import game_pb2, state_pb2, trick_pb2

if TYPE_CHECKING:
    from ninetynine.engine.handlers import RulesMetrics

__all__ = ["GAME", "TrickService", "default_options"]

GAME = "trick"
MAX_METADATA_VALUE = 100
MAX_DISPLAY_NAME = 64


def _now_ms(requested: int) -> int:
    """The request's clock for the next decision (0 or negative: the engine's)."""
    if requested > MAX_TURN_START_MS:
        raise TrickError(Reason.INVALID_STATE, detail=f"nowMs after {MAX_TURN_START_MS}")
    return requested if requested > 0 else time.time_ns() // 1_000_000


def _short(value: str) -> str:
    return value if len(value) <= MAX_METADATA_VALUE else value[: MAX_METADATA_VALUE - 1] + "…"


class TrickService:
    """The trick game's side of the engine RPCs (one per :class:`EngineHandlers`)."""

    def __init__(self, metrics: RulesMetrics, bind: Callable[..., None]) -> None:
        self.metrics = metrics
        self._bind = bind

    def refusal(self, err: TrickError) -> ServiceError:
        self.metrics.refusals.labels(err.reason.value).inc()
        short = TrickError(err.reason, **{k: _short(v) for k, v in err.meta.items()})
        return from_trick_error(short, ENGINE_DOMAIN)

    def _state(self, msg: state_pb2.State) -> TrickState:
        if len(msg.ListFields()) != 1:  # State.trick and nothing else
            raise TrickError(Reason.INVALID_STATE, detail="a trick match sets State.trick only")
        state = trick_wire.state_from_proto(msg.trick)
        self._bind(mode=GAME, seq=state.seq)
        return state

    def _check_room(self, state: TrickState) -> None:
        if state.seq >= MAX_SEQ:
            raise TrickError(Reason.INVALID_STATE, detail="seq at its limit")

    def _played(self, before: TrickState, after: TrickState, source: str) -> None:
        self.metrics.moves_applied.labels(GAME, source).inc()
        if after.finished and not before.finished:
            self.metrics.games_finished.labels(GAME).inc()
        self._bind(seq=after.seq, phase=after.phase.value)

    # -- Setup ---------------------------------------------------------------------------------

    def setup(self, request: pb.SetupRequest) -> pb.SetupResponse:
        try:
            self._bind(mode=GAME, seq=0)
            if request.rules not in ("", GAME) or request.overrides or request.HasField("options"):
                raise TrickError(
                    Reason.INVALID_OPTION,
                    option="rules/overrides/options",
                    value="the trick game takes trick_options only",
                )
            options = trick_wire.options_from_proto(request.trick_options)
            player_ids = list(request.player_ids)
            names = dict(request.display_names)
            for pid, name in sorted(names.items()):
                if pid not in player_ids:
                    raise TrickError(
                        Reason.INVALID_PLAYER_ID, detail=f"display name for unknown player {pid!r}"[:80]
                    )
                if len(name) > MAX_DISPLAY_NAME or not name.isprintable():
                    raise TrickError(Reason.INVALID_PLAYER_ID, detail=f"display name of {pid!r}"[:80])
            seed = request.seed if request.HasField("seed") else secrets.randbits(64)
            state, events = trick.setup(
                player_ids, options, seed=seed, now_ms=_now_ms(request.now_ms), names=names
            )
        except TrickError as err:
            raise self.refusal(err) from None
        response = pb.SetupResponse(seed_commitment=state.seed_commitment)
        trick_wire.state_into(state, response.state.trick)
        trick_wire.events_into(events, response.events)
        self.metrics.games_setup.labels(GAME).inc()
        return response

    # -- Apply ---------------------------------------------------------------------------------

    def apply_to(
        self,
        msg: state_pb2.State,
        player_id: str,
        action_msg: game_pb2.Action,
        *,
        expected_seq: int | None,
        now_ms: int,
        state_out: state_pb2.State | None = None,
    ) -> pb.ApplyResponse:
        try:
            state = self._state(msg)
            self._check_room(state)
            action = trick_wire.action_from_proto(action_msg)
            new_state, events = trick.apply(
                state, player_id, action, now_ms=_now_ms(now_ms), expected_seq=expected_seq
            )
        except TrickError as err:
            raise self.refusal(err) from None
        self._played(state, new_state, "player")
        response = pb.ApplyResponse()
        _state_into(new_state, response.state if state_out is None else state_out)
        trick_wire.events_into(events, response.events)
        return response

    # -- View ----------------------------------------------------------------------------------

    def view(self, request: pb.ViewRequest, lang: Lang) -> pb.ViewResponse:
        """What ``request.viewer_id`` may see (a viewer not seated: what a spectator sees)."""
        try:
            state = self._state(request.state)
            view = trick.player_view(state, request.viewer_id or None)
        except TrickError as err:
            raise self.refusal(err) from None
        response = pb.ViewResponse()
        trick_wire.view_into(view, response.trick)
        return response

    # -- Timeout -------------------------------------------------------------------------------

    def timeout_of(
        self,
        msg: state_pb2.State,
        *,
        expected_seq: int | None,
        now_ms: int,
        state_out: state_pb2.State | None = None,
    ) -> pb.TimeoutResponse:
        """The timeout policy (``trick/timeout.py``) for every pending player, in seat order.

        Every pending player shares the one deadline (``deadline(state)``): while bidding that is
        all who have not bid, else the one player to move. Each gets the policy's action, applied
        in turn; the events of all of them, in order, and the state after the last.
        """
        try:
            state = self._state(msg)
            if expected_seq is not None and expected_seq != state.seq:
                raise TrickError(Reason.STALE_STATE, expectedSeq=expected_seq, seq=state.seq)
            self._check_room(state)
            clock = _now_ms(now_ms)
            players = trick.pending(state)
            if not players:
                raise TrickError(Reason.GAME_FINISHED)
            moves: list[tuple[str, trick.TrickAction]] = []
            events: list[Any] = []
            new_state = state
            for player in players:
                action = trick.timeout_action(new_state, player)
                new_state, more = trick.apply(new_state, player, action, now_ms=clock)
                moves.append((player, action))
                events += more
        except TrickError as err:
            raise self.refusal(err) from None
        self._played(state, new_state, "timeout")
        self._bind(player_id=moves[0][0])
        response = pb.TimeoutResponse(player_id=moves[0][0])
        trick_wire.action_into(moves[0][1], response.action)
        for player, action in moves:
            move = response.trick_moves.add(player_id=player)
            trick_wire.trick_action_into(action, move.action)
        _state_into(new_state, response.state if state_out is None else state_out)
        trick_wire.events_into(events, response.events)
        return response


def _state_into(state: TrickState, out: state_pb2.State) -> None:
    out.Clear()
    trick_wire.state_into(state, out.trick)


def default_options() -> trick_pb2.TrickOptions:
    out = trick_pb2.TrickOptions()
    trick_wire.options_into(trick.TrickOptions(), out)
    return out
