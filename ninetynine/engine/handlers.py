"""The engine's request handling, shared by the gRPC servicer and the in-process engine.

:class:`EngineHandlers` turns one ``SetupRequest`` / ``ApplyRequest`` / ``ViewRequest`` /
``TimeoutRequest`` into its response: convert the state (:mod:`ninetynine.engine.convert`), validate
the request, run the pure rules, build the response. A rules refusal is raised as the
:class:`~ninetynine.common.errors.ServiceError` the engine sends on the wire (reason, domain
``engine.ninetynine``, shortened metadata, Korean and English texts), so
:class:`ninetynine.engine.server.EngineServicer` (which aborts the RPC with it) and
:class:`ninetynine.engine.local.LocalEngine` (which raises it to the session, as the gRPC client
would) give the same answers from the same code.

Rules-level counters (:class:`RulesMetrics`: refusals by reason, games set up and finished, moves
applied) are counted here, wherever the rules run. Canonical-log fields (mode, seq, phase,
player_id) are bound only when the handlers serve an RPC of their own: in-process they would
overwrite the calling session RPC's fields.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from weakref import WeakKeyDictionary

from prometheus_client import CollectorRegistry, Counter

from ninetynine.common.context import bind_rpc_fields
from ninetynine.common.errors import Lang, ServiceError
from ninetynine.engine import convert, games, rules
from ninetynine.engine.errors import ENGINE_DOMAIN, from_rule_error, from_trick_error
from ninetynine.engine.recent import RecentStates
from ninetynine.engine.rules import CLASSIC, KR, PRESETS, GameState, Options, Reason, RuleError, RuleSet
from ninetynine.engine.rules.overrides import MAX_OVERRIDE_TEXT, apply_overrides, label_options
from ninetynine.engine.rules.presets import preset_names, rules_for
from ninetynine.engine.rules.validate import MAX_TURN_START_MS, check_room_for_a_move
from ninetynine.engine.ruleset_proto import check_rules, rules_to_proto
from ninetynine.engine.trick import TrickError
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import game_pb2, rules_pb2, state_pb2

__all__ = ["MAX_DISPLAY_NAME", "MAX_METADATA_VALUE", "EngineHandlers", "RulesMetrics", "rules_metrics"]

# ErrorInfo metadata and messages echo client input (ids, card ids): keep them short.
MAX_METADATA_VALUE = 100
MAX_DISPLAY_NAME = 64


@dataclass(frozen=True)
class RulesMetrics:
    """What the rules did, counted wherever they run (engine process or in-process engine)."""

    refusals: Counter
    games_setup: Counter
    games_finished: Counter
    moves_applied: Counter
    states_received: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry | None) -> RulesMetrics:
        """Fresh counters on ``registry`` (``None``: counted but not exported)."""
        return cls(
            refusals=Counter(
                "ninetynine_engine_refusals_total",
                "Requests the engine refused, by reason code.",
                ("reason",),
                registry=registry,
            ),
            games_setup=Counter(
                "ninetynine_engine_games_setup_total", "Games set up, by mode.", ("mode",), registry=registry
            ),
            games_finished=Counter(
                "ninetynine_engine_games_finished_total",
                "Games that reached the finished phase, by mode.",
                ("mode",),
                registry=registry,
            ),
            moves_applied=Counter(
                "ninetynine_engine_moves_applied_total",
                "Plays applied, by mode and source (player = Apply, timeout = Timeout).",
                ("mode", "source"),
                registry=registry,
            ),
            states_received=Counter(
                "ninetynine_engine_states_received_total",
                "Game states received with a request, by how they were read: reused (byte for byte"
                " one this engine answered with lately, kept decoded) or decoded.",
                ("how",),
                registry=registry,
            ),
        )


_REGISTERED: WeakKeyDictionary[CollectorRegistry, RulesMetrics] = WeakKeyDictionary()


def rules_metrics(registry: CollectorRegistry) -> RulesMetrics:
    """The rules counters of ``registry``, created on first use.

    One set per registry: an engine server and an in-process engine in the same process (tests,
    a future combined binary) count into the same series instead of failing as duplicates.
    """
    metrics = _REGISTERED.get(registry)
    if metrics is None:
        metrics = _REGISTERED[registry] = RulesMetrics.create(registry)
    return metrics


def _now_ms(requested: int) -> int:
    """The request's clock for the next turn (0 or negative: the engine's)."""
    if requested > MAX_TURN_START_MS:
        # Its deadline would not fit the events' int64 (nor a JSON client's MillisEpoch).
        raise RuleError(Reason.INVALID_STATE, detail=f"nowMs after {MAX_TURN_START_MS}")
    return requested if requested > 0 else time.time_ns() // 1_000_000


def _short(value: str) -> str:
    return value if len(value) <= MAX_METADATA_VALUE else value[: MAX_METADATA_VALUE - 1] + "…"


def _no_fields(**_fields: object) -> None:
    return None


def _game_rules(name: str, options: Options, overrides: Mapping[str, str]) -> tuple[Options, RuleSet | None]:
    """The options a new game is labelled with and the preset it plays (None: the mode of ``options``).

    ``kr-product`` and ``classic`` without overrides are the spec's modes, played from ``options``
    as before; any other preset, or a sheet of overrides, makes a preset game whose whole rule
    set the state carries. A preset game is labelled with the mode whose cards it uses.
    """
    if name and name not in preset_names():
        raise RuleError(Reason.UNKNOWN_RULES, rules=name[:MAX_OVERRIDE_TEXT])
    if name in (KR, CLASSIC):
        options = replace(options, mode=name)
    if name in PRESETS:
        base = PRESETS[name]
        options = label_options(base)
    elif not overrides:
        return options, None
    else:
        base = rules_for(options)
    resolved = apply_overrides(base, overrides)
    try:
        check_rules(resolved)
    except RuleError as err:
        sheet = ",".join(sorted(overrides))  # together they make a rule set the engine cannot play
        raise RuleError(Reason.INVALID_OVERRIDE, key=sheet, value=err.meta.get("detail", "")) from None
    return options, resolved


def list_rules() -> rules_pb2.ListRulesResponse:
    """Every preset, the spec's two modes first, with its whole rule set."""
    response = rules_pb2.ListRulesResponse()
    for name in preset_names():
        rules = PRESETS[name] if name in PRESETS else rules_for(Options(mode=name))
        fewest, most = rules.players
        response.presets.append(
            rules_pb2.RulePreset(
                name=name,
                summary=rules.summary,
                summary_en=rules.summary_en,
                source=rules.source,
                min_players=fewest,
                max_players=most,
                rules=rules_to_proto(rules),
                game=games.ADDING,
            )
        )
    for kind in games.GAMES.values():
        if kind.listing is not None:
            response.presets.extend(kind.listing())
    return response


_LIST_RULES = list_rules()


class EngineHandlers:
    """Setup / Apply / View / Timeout as plain calls: request message in, response out.

    Refusals raise :class:`ServiceError`. ``log_fields`` binds mode, seq, phase and player_id to
    the current RPC's canonical line (the engine server); leave it off in-process.
    """

    def __init__(
        self, metrics: RulesMetrics, *, log_fields: bool = True, recent: RecentStates | None = None
    ) -> None:
        self.metrics = metrics
        # The states this engine answered with, decoded (:mod:`ninetynine.engine.recent`).
        self.recent = RecentStates() if recent is None else recent
        self._reused = metrics.states_received.labels("reused")
        self._decoded = metrics.states_received.labels("decoded")
        # The new state of the last Apply or Timeout answered, for take_answered.
        self._answered: GameState | None = None
        self._bind: Callable[..., None] = bind_rpc_fields if log_fields else _no_fields
        # Every other game of the registry, by name: the handlers below serve the adding game and
        # hand any other game's requests to its service.
        self._games: dict[str, games.GameService] = {
            kind.name: kind.service(metrics, self._bind)
            for kind in games.GAMES.values()
            if kind.service is not None
        }

    def _other(self, msg: state_pb2.State) -> games.GameService | None:
        """The service of the game ``msg`` is a state of; None for the adding game."""
        return self._games.get(games.kind_of(msg).name)

    def refusal(self, err: RuleError) -> ServiceError:
        """The service error for a rules refusal (counted by reason)."""
        self.metrics.refusals.labels(err.reason.value).inc()
        short = RuleError(err.reason, **{k: _short(v) for k, v in err.meta.items()})
        return from_rule_error(short, ENGINE_DOMAIN)

    def _state(self, msg: state_pb2.State, wire: bytes | None) -> GameState:
        """The request's state, decoded and checked, or as this engine answered with it when it
        came as ``wire`` (its bytes in the request) and they are those of a recent answer."""
        state = None if wire is None else self.recent.get(wire)
        if state is None:
            self._decoded.inc()
            state = convert.state_from_proto(msg)
        else:
            self._reused.inc()
        self._bind(mode=state.options.mode, seq=state.seq)
        return state

    def take_answered(self) -> GameState | None:
        """The new state of the Apply or Timeout just answered (None after a refusal, or once taken).

        For a caller that serializes the answer itself (:mod:`ninetynine.engine.applymany`) and so
        has the state's bytes to keep it by in :attr:`recent`.
        """
        answered, self._answered = self._answered, None
        return answered

    def count_refusal(self, reason: str) -> None:
        """Count a request refused before the rules saw it (MALFORMED_REQUEST...)."""
        self.metrics.refusals.labels(reason).inc()

    def _played(self, before: GameState, after: GameState, source: str) -> None:
        mode = after.options.mode
        self.metrics.moves_applied.labels(mode, source).inc()
        if after.finished and not before.finished:
            self.metrics.games_finished.labels(mode).inc()
        self._bind(seq=after.seq, phase=after.phase.value)

    def setup(self, request: pb.SetupRequest) -> pb.SetupResponse:
        try:
            other = self._games.get(games.kind_of_setup(request.game, request.rules).name)
        except TrickError as err:
            self.metrics.refusals.labels(err.reason.value).inc()
            raise from_trick_error(err, ENGINE_DOMAIN) from None
        if other is not None:
            return other.setup(request)
        try:
            options = convert.options_from_proto(request.options)
            self._bind(mode=options.mode, seq=0)
            player_ids = list(request.player_ids)
            names = dict(request.display_names)
            # A map's order differs between processes: check in id order, so the refusal names the
            # same player however the request is read.
            for pid, name in sorted(names.items()):
                if pid not in player_ids:
                    raise RuleError(
                        Reason.INVALID_PLAYER_ID, detail=f"display name for unknown player {pid!r}"[:80]
                    )
                if len(name) > MAX_DISPLAY_NAME or not name.isprintable():
                    raise RuleError(Reason.INVALID_PLAYER_ID, detail=f"display name of {pid!r}"[:80])
            options, preset = _game_rules(request.rules, options, request.overrides)
            seed = request.seed if request.HasField("seed") else secrets.randbits(64)
            state, events = rules.setup(
                player_ids, options, seed=seed, now_ms=_now_ms(request.now_ms), names=names, rules=preset
            )
        except RuleError as err:
            raise self.refusal(err) from None
        response = pb.SetupResponse(seed_commitment=state.seed_commitment)
        convert.state_into(state, response.state)
        convert.events_into(events, response.events)
        self.metrics.games_setup.labels(options.mode).inc()
        return response

    def list_rules(self, request: rules_pb2.ListRulesRequest) -> rules_pb2.ListRulesResponse:
        """Every preset (the same answer for every request: built once)."""
        response = rules_pb2.ListRulesResponse()
        response.CopyFrom(_LIST_RULES)
        return response

    def apply(self, request: pb.ApplyRequest, state_wire: bytes | None = None) -> pb.ApplyResponse:
        """Apply; ``state_wire``: the bytes ``request.state`` came as, when the caller has them."""
        return self.apply_to(
            request.state,
            request.player_id,
            request.action,
            expected_seq=request.expected_seq if request.HasField("expected_seq") else None,
            now_ms=request.now_ms,
            state_wire=state_wire,
        )

    def apply_to(
        self,
        msg: state_pb2.State,
        player_id: str,
        action_msg: game_pb2.Action,
        *,
        expected_seq: int | None,
        now_ms: int,
        state_out: state_pb2.State | None = None,
        state_wire: bytes | None = None,
    ) -> pb.ApplyResponse:
        """Apply's work on its request's parts; the new state goes into ``state_out`` when given
        (the response's ``state`` stays empty), so an in-process caller gets it without a copy."""
        self._answered = None
        other = self._other(msg)
        if other is not None:
            return other.apply_to(
                msg, player_id, action_msg, expected_seq=expected_seq, now_ms=now_ms, state_out=state_out
            )
        try:
            state = self._state(msg, state_wire)
            check_room_for_a_move(state)
            action = convert.action_from_proto(action_msg)
            new_state, events = rules.apply(
                state, player_id, action, now_ms=_now_ms(now_ms), expected_seq=expected_seq
            )
        except RuleError as err:
            raise self.refusal(err) from None
        self._played(state, new_state, "player")
        response = pb.ApplyResponse()
        _state_into(new_state, response.state if state_out is None else state_out)
        convert.events_into(events, response.events)
        self._answered = new_state
        return response

    def view(self, request: pb.ViewRequest, lang: Lang) -> pb.ViewResponse:
        """What ``request.viewer_id`` may see, its texts in ``lang``."""
        other = self._other(request.state)
        if other is not None:
            return other.view(request, lang)
        try:
            state = self._state(request.state, None)
            view = rules.player_view(state, request.viewer_id or None)
        except RuleError as err:
            raise self.refusal(err) from None
        response = pb.ViewResponse()
        convert.view_into(view, state.options, response.view, lang, state.rules)
        return response

    def timeout(self, request: pb.TimeoutRequest, state_wire: bytes | None = None) -> pb.TimeoutResponse:
        """Timeout; ``state_wire``: as for :meth:`apply`."""
        return self.timeout_of(
            request.state,
            expected_seq=request.expected_seq if request.HasField("expected_seq") else None,
            now_ms=request.now_ms,
            state_wire=state_wire,
        )

    def timeout_of(
        self,
        msg: state_pb2.State,
        *,
        expected_seq: int | None,
        now_ms: int,
        state_out: state_pb2.State | None = None,
        state_wire: bytes | None = None,
    ) -> pb.TimeoutResponse:
        """Timeout's work on its request's parts (``state_out``: as :meth:`apply_to`)."""
        self._answered = None
        other = self._other(msg)
        if other is not None:
            return other.timeout_of(msg, expected_seq=expected_seq, now_ms=now_ms, state_out=state_out)
        try:
            state = self._state(msg, state_wire)
            if expected_seq is not None and expected_seq != state.seq:
                raise RuleError(Reason.STALE_STATE, expectedSeq=expected_seq, seq=state.seq)
            check_room_for_a_move(state)
            action = rules.timeout_action(state)
            player = state.current
            new_state, events = rules.apply(state, player, action, now_ms=_now_ms(now_ms))
            moves = [(player, action)]
            # The exchange phase: everyone who still owes a pass shares the deadline.
            while state.phase is rules.Phase.EXCHANGE and new_state.phase is rules.Phase.EXCHANGE:
                more = rules.timeout_action(new_state)
                moves.append((new_state.current, more))
                new_state, later = rules.apply(new_state, new_state.current, more, now_ms=_now_ms(now_ms))
                events += later
        except RuleError as err:
            raise self.refusal(err) from None
        self._played(state, new_state, "timeout")
        self._bind(player_id=player)
        response = pb.TimeoutResponse(player_id=player)
        convert.action_into(action, response.action)
        if state.phase is rules.Phase.EXCHANGE:
            for who, move in moves:
                convert.action_into(move, response.exchange_moves.add(player_id=who).action)
        _state_into(new_state, response.state if state_out is None else state_out)
        convert.events_into(events, response.events)
        self._answered = new_state
        return response


def _state_into(state: GameState, out: state_pb2.State) -> None:
    # ``out`` may be a caller's message holding the previous state (already converted from).
    out.Clear()
    convert.state_into(state, out)
