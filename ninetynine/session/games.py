"""The game registry: everything the session knows about the games it hosts, one entry per kind.

Rooms, seats, deadlines, reconnects, replays and views are the same for every game; what differs
(the seats a game takes, how its options and rules are checked at CreateRoom, who owes a decision
now and for how long, the bot's move, the views, the result) is asked of the room's entry,
found by :func:`of` from the kind stored in the room document. Nothing else in the session
imports a game's rules.

An entry works on the room document (``doc.state`` holds the engine's state of the room's game)
and on the decoded game (:meth:`Game.decode`, decoded once per room version by
:class:`~ninetynine.session.roomcache.Loaded`), which only the entry looks into.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

import orjson
from google.protobuf.message import Message

from ninetynine.common.codec import Codec
from ninetynine.common.errors import Lang
from ninetynine.engine import trick_wire
from ninetynine.engine.convert import (
    action_to_proto,
    options_from_proto,
    private_view_into,
    public_view_into,
    result_into,
    state_from_proto,
)
from ninetynine.engine.errors import from_rule_error
from ninetynine.engine.rules import (
    GameState,
    RuleError,
    check_replayable,
    game_result,
    private_view,
    public_view,
)
from ninetynine.engine.trick import TrickOptions, TrickState
from ninetynine.engine.trick import game_result as trick_game_result
from ninetynine.engine.trick import private_view as trick_private_view
from ninetynine.engine.trick import public_view as trick_public_view
from ninetynine.engine.trick.bot import bot_action as trick_bot_action
from ninetynine.engine.trick_wire import action_into as trick_action_into
from ninetynine.engine.v1 import engine_service_pb2 as engine_pb
from ninetynine.engine.v1 import game_pb2, state_pb2, trick_pb2, view_pb2
from ninetynine.session import rulebook
from ninetynine.session.bots import bot_action
from ninetynine.session.enginecalls import EngineCalls
from ninetynine.session.errors import session_error
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

# The kind of a room document written before the registry (no `game`): the adding game.
ADDING = "adding"


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision a player owes now: since when, and how many seconds a human has for it.

    ``shortens``: the 3-second rule (a seat that left or timed out three times in a row) applies;
    not to a decision several players owe at once, whose timeout moves for all of them.
    """

    player_id: str
    started_at_ms: int
    seconds: int
    shortens: bool = True


NOBODY = Decision("", 0, 0)


class Game(ABC):
    """One game kind the session hosts."""

    kind: str
    # What clients and metrics call the game (the store's `mode` column, the rules label).
    min_seats: int
    max_seats: int

    # -- CreateRoom and StartGame --------------------------------------------------------------

    @abstractmethod
    async def check_create(self, request: pb.CreateRoomRequest, engine: EngineCalls) -> None:
        """Refuse options, rules and seats the game cannot be played with (the state untouched)."""

    def check_seats(self, max_seats: int) -> None:
        if not self.min_seats <= max_seats <= self.max_seats:
            raise session_error("INVALID_SEATS", maxSeats=max_seats)

    async def setup(self, engine: EngineCalls, doc: doc_pb.RoomDocument, now: int) -> engine_pb.SetupResponse:
        """A new game for the room's seats, its first decision starting ``now``."""
        return await engine.setup(doc, now)

    def check_start(self, seated: int) -> None:
        """Refuse StartGame with too few seated (NOT_ENOUGH_PLAYERS)."""
        if seated < self.min_seats:
            raise session_error("NOT_ENOUGH_PLAYERS", seated=seated, needed=self.min_seats)

    @abstractmethod
    def mode(self, doc: doc_pb.RoomDocument) -> str:
        """The rule set's name: the store's listing column and the metrics' label."""

    def room_into(self, doc: doc_pb.RoomDocument, room: pb.Room) -> None:
        """Add the game's part of the public room (its rules)."""
        return None  # nothing, unless the game says otherwise

    # -- the game in play ----------------------------------------------------------------------

    @abstractmethod
    def decode(self, doc: doc_pb.RoomDocument) -> object:
        """The room's game state, decoded (kept by the room cache for one version)."""

    def state_seq(self, doc: doc_pb.RoomDocument) -> int:
        """The game's move counter (views and deadlines are checked against it)."""
        return doc.state.seq

    def seed(self, doc: doc_pb.RoomDocument) -> tuple[int, str]:
        """The game's seed and its commitment."""
        return doc.state.seed, doc.state.seed_commitment

    def outdated(self, doc: doc_pb.RoomDocument, move_seq: int) -> bool:
        """Whether a play chosen from the view of move ``move_seq`` is for another situation."""
        return move_seq != self.state_seq(doc)

    async def timeout(
        self, engine: EngineCalls, doc: doc_pb.RoomDocument, wire: bytes | None, player_id: str, now: int
    ) -> engine_pb.TimeoutResponse:
        """The engine's automatic move for ``player_id``, whose deadline passed."""
        return await engine.timeout(doc, wire, now)

    def timed_moves(self, timed: engine_pb.TimeoutResponse) -> list[tuple[str, game_pb2.Action]]:
        """Every move the engine's timeout made, in order: (player, action)."""
        return [(timed.player_id, timed.action)]

    @abstractmethod
    def finished(self, doc: doc_pb.RoomDocument) -> bool:
        """Whether the game in ``doc.state`` is over."""

    @abstractmethod
    def decisions(self, doc: doc_pb.RoomDocument) -> Sequence[Decision]:
        """Who owes a decision now (several at once where the game says so), and for how long."""

    def owes(self, doc: doc_pb.RoomDocument, player_id: str) -> bool:
        return any(d.player_id == player_id for d in self.decisions(doc))

    def announce(self, doc: doc_pb.RoomDocument, events: Iterable[pb.RoomEvent]) -> None:
        """Write the room's deadlines (``deadline_ms`` for ``deadline_player_id``, else
        ``shown_deadline_ms``) into the events that announce the decisions they are for."""
        return None  # nothing, unless the game says otherwise

    @abstractmethod
    def takes(self, action: game_pb2.Action) -> bool:
        """Whether ``action`` has the shape of one of the game's actions (the rules judge the rest)."""

    def check_action(self, action: game_pb2.Action) -> None:
        """Refuse an action of no shape of this game's (INVALID_ACTION)."""
        if not self.takes(action):
            raise session_error("INVALID_ACTION")

    def outcome_total(self, doc: doc_pb.RoomDocument) -> int:
        """The number a play's answer carries (the adding game's running total)."""
        return 0

    def public_action(self, action: game_pb2.Action) -> game_pb2.Action | None:
        """``action`` as the other players may see it when the session announces it (a timeout's
        move), or ``None`` when all of it is public."""
        return None

    @abstractmethod
    def bot_move(self, game: object, player_id: str) -> game_pb2.Action:
        """The bot's move for ``player_id`` in the decoded ``game``."""

    # -- views and results ---------------------------------------------------------------------

    @abstractmethod
    def public_view(self, game: object, deadline_ms: int) -> Message:
        """The part of the view every viewer gets alike."""

    @abstractmethod
    def private_view(self, game: object, viewer: str | None, lang: Lang) -> Message:
        """What ``viewer`` gets on top of the public part (disjoint fields of the same message)."""

    def public_view_json(self, game: object, deadline_ms: int) -> bytes | None:
        """The client JSON of :meth:`public_view` (the view's first keys), or None when the game
        writes its views as messages only.

        A game whose rules write views in the client protocol's shape gives both parts here, so a
        WebSocket client's view costs no message on the way (``SubscribeRequest.view_json``).
        """
        return None

    def private_view_json(self, game: object, viewer: str | None) -> bytes | None:
        """The client JSON of :meth:`private_view` (the view's last keys, in every language: the
        JSON leaves the texts out), or None for a viewer or game :meth:`public_view_json` does
        not serve; the view is then encoded from its message."""
        return None

    @property
    @abstractmethod
    def view_field(self) -> str:
        """The field of ``ViewUpdate`` and ``GetViewResponse`` the game's view goes in."""

    @abstractmethod
    def result_into(self, game: object, out: pb.GetResultResponse | pb.GetReplayResponse) -> None:
        """The finished game's result into the response."""

    @abstractmethod
    def replay_into(self, doc: doc_pb.RoomDocument, game: object, out: pb.GetReplayResponse) -> None:
        """What a replay carries besides the moves and events (refused when it cannot be replayed)."""

    def count_outcomes(self, events: Iterable[pb.RoomEvent], count: Callable[[str], None]) -> None:
        """Call ``count`` with the name of each outcome the metrics count among ``events``."""
        return None  # nothing, unless the game says otherwise


DEFAULT_TURN_SECONDS = 15


def turn_seconds(doc: doc_pb.RoomDocument) -> int:
    """The adding game's turn: the room's option, else the default."""
    return doc.options.turn_seconds if doc.options.HasField("turn_seconds") else DEFAULT_TURN_SECONDS


def shown_deadline_ms(doc: doc_pb.RoomDocument) -> int:
    """The deadline the room shows its players: the latest of several owed at once, else the
    one it enforces (``deadlines.TurnClock`` sets both)."""
    return doc.shown_deadline_ms or doc.deadline_ms


def _public_values(state: GameState, deadline_ms: int) -> dict[str, object]:
    """The rules' public view with the session's deadline, the real one (3 s rule, bots), when set."""
    view = public_view(state)
    if deadline_ms:
        view["deadline"] = deadline_ms
    return view


class Adding(Game):
    """The adding game of the spec (every rule set of the rules library)."""

    kind = ADDING
    min_seats = 2
    max_seats = 10

    async def check_create(self, request: pb.CreateRoomRequest, engine: EngineCalls) -> None:
        self.check_seats(request.max_seats)
        try:
            options_from_proto(request.options)
        except RuleError as err:
            raise from_rule_error(err) from None
        if rulebook.plays_rules(request.rules, request.overrides):
            rulebook.bound_overrides(request.overrides)
            await engine.check_rules(request.rules, request.overrides, request.options)
            chosen = rulebook.room_rules(request.rules, request.overrides, request.options)
            rulebook.check_seats(chosen, request.max_seats)

    def mode(self, doc: doc_pb.RoomDocument) -> str:
        return doc.rules or rulebook.mode_name(doc.options)

    def room_into(self, doc: doc_pb.RoomDocument, room: pb.Room) -> None:
        if rulebook.plays_rules(doc.rules, doc.overrides):
            room.rules.CopyFrom(rulebook.room_rules(doc.rules, doc.overrides, doc.options))

    def decode(self, doc: doc_pb.RoomDocument) -> GameState:
        return state_from_proto(doc.state, validate=False)

    def finished(self, doc: doc_pb.RoomDocument) -> bool:
        return doc.state.phase == state_pb2.PHASE_FINISHED

    def outdated(self, doc: doc_pb.RoomDocument, move_seq: int) -> bool:
        # The passes of an exchange are chosen in any order: another player's pass since the view
        # does not change the hand a pass is chosen from.
        state = doc.state
        if state.phase == state_pb2.PHASE_EXCHANGE:
            passed = sum(1 for s in state.seats if s.HasField("passing") and s.passing)
            return not state.seq - passed <= move_seq <= state.seq
        return move_seq != state.seq

    def decisions(self, doc: doc_pb.RoomDocument) -> Sequence[Decision]:
        state = doc.state
        if state.phase == state_pb2.PHASE_EXCHANGE:
            # Everyone who has not chosen the card to pass owes it at once; the timeout passes for all.
            return tuple(
                Decision(s.id, state.turn_started_at_ms, turn_seconds(doc), shortens=False)
                for s in state.seats
                if s.HasField("passing") and not s.passing
            )
        if state.phase == state_pb2.PHASE_FINISHED or not state.current:
            return ()
        return (Decision(state.current, state.turn_started_at_ms, turn_seconds(doc)),)

    def owes(self, doc: doc_pb.RoomDocument, player_id: str) -> bool:
        state = doc.state
        if state.phase == state_pb2.PHASE_EXCHANGE:
            return any(s.id == player_id and s.HasField("passing") and not s.passing for s in state.seats)
        return state.current == player_id

    def announce(self, doc: doc_pb.RoomDocument, events: Iterable[pb.RoomEvent]) -> None:
        # The rules' event carries the plain turn_seconds deadline; the one the scheduler fires
        # at (a bot's pace, the 3 s rule, the time scale) is the document's, which views carry too.
        for event in events:
            if event.HasField("game") and event.game.HasField("turn_started"):
                turn = event.game.turn_started
                if turn.player_id == doc.state.current:
                    turn.deadline_ms = doc.deadline_ms
            elif event.HasField("game") and event.game.HasField("exchange_started"):
                # Several owe a pass at once: the table is shown when the last of them is due.
                event.game.exchange_started.deadline_ms = shown_deadline_ms(doc)

    def timed_moves(self, timed: engine_pb.TimeoutResponse) -> list[tuple[str, game_pb2.Action]]:
        if not timed.exchange_moves:
            return [(timed.player_id, timed.action)]
        return [(m.player_id, m.action) for m in timed.exchange_moves]

    def takes(self, action: game_pb2.Action) -> bool:
        return bool(action.card_id)

    def outcome_total(self, doc: doc_pb.RoomDocument) -> int:
        return doc.state.total

    def bot_move(self, game: object, player_id: str) -> game_pb2.Action:
        return action_to_proto(bot_action(cast(GameState, game), player_id))

    def public_view(self, game: object, deadline_ms: int) -> view_pb2.GameView:
        public = view_pb2.GameView()
        public_view_into(_public_values(cast(GameState, game), deadline_ms), public)
        return public

    def private_view(self, game: object, viewer: str | None, lang: Lang) -> view_pb2.GameView:
        state = cast(GameState, game)
        out = view_pb2.GameView()
        private_view_into(private_view(state, viewer), state.options, out, lang, state.rules)
        return out

    # The rules write both parts of a view key for key and in order as the client reads them
    # (tests/session/test_view_json.py).

    def public_view_json(self, game: object, deadline_ms: int) -> bytes:
        return orjson.dumps(_public_values(cast(GameState, game), deadline_ms))

    def private_view_json(self, game: object, viewer: str | None) -> bytes | None:
        state = cast(GameState, game)
        if viewer is not None and viewer not in state.hands:
            return None  # nobody's seat: the message's JSON has an empty hand, the rules write none
        return orjson.dumps(private_view(state, viewer))

    @property
    def view_field(self) -> str:
        return "view"

    def result_into(self, game: object, out: pb.GetResultResponse | pb.GetReplayResponse) -> None:
        result_into(game_result(cast(GameState, game)).to_dict(), out.result)

    def replay_into(self, doc: doc_pb.RoomDocument, game: object, out: pb.GetReplayResponse) -> None:
        state = cast(GameState, game)
        try:
            check_replayable(state)
        except RuleError as err:
            raise from_rule_error(err) from None
        out.player_ids.extend(state.seats)
        out.options.CopyFrom(doc.options)
        if rulebook.plays_rules(doc.rules, doc.overrides):
            out.rules.CopyFrom(rulebook.room_rules(doc.rules, doc.overrides, doc.options))

    def count_outcomes(self, events: Iterable[pb.RoomEvent], count: Callable[[str], None]) -> None:
        for event in events:
            if event.HasField("game") and event.game.HasField("eliminated"):
                count("eliminated")


TRICK = "trick"
_TRICK_FINISHED = trick_pb2.TRICK_PHASE_FINISHED
_TRICK_BIDDING = trick_pb2.TRICK_PHASE_BIDDING
_TRICK_CODEC = Codec()


@lru_cache(maxsize=256)
def _trick_options(wire: bytes) -> TrickOptions:
    return trick_wire.options_from_proto(trick_pb2.TrickOptions.FromString(wire))


class Trick(Game):
    """The trick-taking 99 of source 004 part I (docs/games/trick-taking.md): three seats."""

    kind = TRICK
    min_seats = 3
    max_seats = 3

    def check_seats(self, max_seats: int) -> None:
        if max_seats != 3:
            raise session_error(
                "SEATS_OUTSIDE_RULES", rules=TRICK, minPlayers=3, maxPlayers=3, maxSeats=max_seats
            )

    async def check_create(self, request: pb.CreateRoomRequest, engine: EngineCalls) -> None:
        # The engine judges options, rules and house rules as it will at StartGame.
        self.check_seats(request.max_seats)
        await engine.check_trick(request.trick_options, request.rules, request.overrides)

    async def setup(self, engine: EngineCalls, doc: doc_pb.RoomDocument, now: int) -> engine_pb.SetupResponse:
        return await engine.setup_trick(doc, now)

    def mode(self, doc: doc_pb.RoomDocument) -> str:
        return TRICK

    def room_into(self, doc: doc_pb.RoomDocument, room: pb.Room) -> None:
        room.game = TRICK
        room.trick_options.CopyFrom(doc.trick_options)

    def options(self, doc: doc_pb.RoomDocument) -> TrickOptions:
        return _trick_options(doc.trick_options.SerializeToString())

    def decode(self, doc: doc_pb.RoomDocument) -> TrickState:
        return trick_wire.state_from_proto(doc.state.trick, validate=False)

    def state_seq(self, doc: doc_pb.RoomDocument) -> int:
        return doc.state.trick.seq

    def seed(self, doc: doc_pb.RoomDocument) -> tuple[int, str]:
        return doc.state.trick.seed, doc.state.trick.seed_commitment

    def outdated(self, doc: doc_pb.RoomDocument, move_seq: int) -> bool:
        # The bids of one deal are laid in any order: another player's bid since the view does
        # not change the hand a bid is chosen from.
        state = doc.state.trick
        if state.phase == _TRICK_BIDDING:
            laid = sum(1 for s in state.seats if s.bid)
            return not state.seq - laid <= move_seq <= state.seq
        return move_seq != state.seq

    def finished(self, doc: doc_pb.RoomDocument) -> bool:
        return doc.state.trick.phase == _TRICK_FINISHED

    def decisions(self, doc: doc_pb.RoomDocument) -> Sequence[Decision]:
        state = doc.state.trick
        options = self.options(doc)
        if state.phase == _TRICK_BIDDING:
            # Everyone who has not bid owes their bid at once; the timeout lays all of them.
            return tuple(
                Decision(s.id, state.decision_started_at_ms, options.bid_seconds, shortens=False)
                for s in state.seats
                if not s.bid
            )
        if state.phase == _TRICK_FINISHED or not state.current:
            return ()
        return (Decision(state.current, state.decision_started_at_ms, options.turn_seconds),)

    def announce(self, doc: doc_pb.RoomDocument, events: Iterable[pb.RoomEvent]) -> None:
        for event in events:
            if not event.HasField("game"):
                continue
            game = event.game
            if (
                game.HasField("trick_turn_started")
                and game.trick_turn_started.player_id == doc.deadline_player_id
            ):
                game.trick_turn_started.deadline_ms = doc.deadline_ms
            elif game.HasField("bidding_started"):
                game.bidding_started.deadline_ms = shown_deadline_ms(doc)

    def takes(self, action: game_pb2.Action) -> bool:
        return action.HasField("trick") and not action.card_id

    def public_action(self, action: game_pb2.Action) -> game_pb2.Action | None:
        if not action.trick.cards:
            return None
        # The bid cards stay face down: the others learn that a bid was laid, not which cards.
        return game_pb2.Action(trick=trick_pb2.TrickAction(kind=action.trick.kind))

    def bot_move(self, game: object, player_id: str) -> game_pb2.Action:
        out = game_pb2.Action()
        trick_action_into(trick_bot_action(cast(TrickState, game), player_id), out)
        return out

    def timed_moves(self, timed: engine_pb.TimeoutResponse) -> list[tuple[str, game_pb2.Action]]:
        if not timed.trick_moves:
            return [(timed.player_id, timed.action)]
        return [(m.player_id, game_pb2.Action(trick=m.action)) for m in timed.trick_moves]

    def public_view(self, game: object, deadline_ms: int) -> trick_pb2.TrickView:
        state = cast(TrickState, game)
        view = trick_public_view(state)
        if deadline_ms and view.get("deadline") is not None:
            # The session's timer (bots' pace, the 3 s rule, the time scale) is the real one.
            view["deadline"] = deadline_ms
        out = trick_pb2.TrickView()
        _TRICK_CODEC.decode(view, out)
        return out

    def private_view(self, game: object, viewer: str | None, lang: Lang) -> trick_pb2.TrickView:
        out = trick_pb2.TrickView()
        _TRICK_CODEC.decode(trick_private_view(cast(TrickState, game), viewer), out)
        return out

    @property
    def view_field(self) -> str:
        return "trick"

    def result_into(self, game: object, out: pb.GetResultResponse | pb.GetReplayResponse) -> None:
        _TRICK_CODEC.decode(trick_game_result(cast(TrickState, game)).to_dict(), out.trick_result)

    def replay_into(self, doc: doc_pb.RoomDocument, game: object, out: pb.GetReplayResponse) -> None:
        state = cast(TrickState, game)
        out.game = TRICK
        out.player_ids.extend(state.seats)
        out.trick_options.CopyFrom(doc.trick_options)


REGISTRY: Mapping[str, Game] = {ADDING: Adding(), TRICK: Trick()}


def kind_of(doc: doc_pb.RoomDocument) -> str:
    """The kind of game ``doc`` hosts (documents from before the registry host the adding game)."""
    return doc.game or ADDING


def of(doc: doc_pb.RoomDocument) -> Game:
    """The registry's entry for the game ``doc`` hosts."""
    return REGISTRY[kind_of(doc)]


def entry(kind: str) -> Game:
    """The entry for ``kind`` (empty: the adding game); UNKNOWN_GAME for a kind not hosted here."""
    found = REGISTRY.get(kind or ADDING)
    if found is None:
        raise session_error("UNKNOWN_GAME", game=kind[:32])
    return found


def check_any_action(action: game_pb2.Action) -> None:
    """Refuse, before the room is read, an action no hosted game takes (INVALID_ACTION)."""
    if not any(game.takes(action) for game in REGISTRY.values()):
        raise session_error("INVALID_ACTION")
