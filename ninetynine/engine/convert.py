"""Conversions between the rules engine's Python values and the ``ninetynine.engine.v1`` messages.

Incoming messages are untrusted: every unknown enum number, missing sub-message or impossible
value becomes a :class:`RuleError` (``INVALID_STATE`` for states, the matching reason for
options and actions) and a converted state always goes through :func:`validate_state` before
the rules see it. Nothing here raises anything but :class:`RuleError` on bad input.

The game state and the options are converted here by hand: they are the rules' working form,
not what a client reads. Events, views and results are not: the rules write them in the client
protocol's JSON shape, and the codec's readers, compiled from the descriptors, write that shape
into the messages. The Apply path runs on every move, so the state converters write straight
into the response's sub-messages, and the option conversions are cached: a game's options never
change. A preset game's
rule set (``State.rules``) is decoded and checked once per distinct rule set
(:mod:`ninetynine.engine.ruleset_proto`) and written back as cached bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from ninetynine.common.codec import Codec, enum_json, enum_names, enum_numbers
from ninetynine.common.v1 import json_options_pb2
from ninetynine.common.wire import length_delimited
from ninetynine.engine.rules import (
    Action,
    Event,
    GameState,
    Options,
    Phase,
    PlayRecord,
    Reason,
    RngState,
    RuleError,
    RuleSet,
    validate_state,
)
from ninetynine.engine.rules.errors import Lang
from ninetynine.engine.rules.errors import message as reason_message
from ninetynine.engine.rules.ruleset import CardType, DeckStyle
from ninetynine.engine.ruleset_proto import rules_from_wire, rules_to_proto
from ninetynine.engine.v1 import events_pb2, game_pb2, state_pb2, view_pb2

# -- enum tables (proto number <-> rules value) ----------------------------------------------
# The rules' values are the client protocol's names, so the tables are the codec's, from the
# descriptors: a zero value ("unspecified") reads as the default where the .proto declares one.

_MODE_IN: dict[int, Any] = enum_json(game_pb2.Mode.DESCRIPTOR)
_MODE_OUT: dict[Any, Any] = enum_numbers(game_pb2.Mode.DESCRIPTOR)
_START_TOTAL_IN: dict[int, Any] = enum_json(game_pb2.StartTotal.DESCRIPTOR)
_START_TOTAL_OUT: dict[Any, Any] = enum_numbers(game_pb2.StartTotal.DESCRIPTOR)
_AFTER_IN: dict[int, Any] = enum_json(game_pb2.AfterElimination.DESCRIPTOR)
_AFTER_OUT: dict[Any, Any] = enum_numbers(game_pb2.AfterElimination.DESCRIPTOR)
_FLOOR_IN: dict[int, Any] = enum_json(game_pb2.FloorAtZero.DESCRIPTOR)
_FLOOR_OUT: dict[Any, Any] = enum_numbers(game_pb2.FloorAtZero.DESCRIPTOR)
_JOKER_IN: dict[int, Any] = enum_json(game_pb2.JokerRange.DESCRIPTOR)
_JOKER_OUT: dict[Any, Any] = enum_numbers(game_pb2.JokerRange.DESCRIPTOR)

# Not chosen (zero) is None; the direction and the phase have no default (zero is refused).
_SIGN_IN: dict[int, Any] = {0: None, **enum_names(game_pb2.Sign.DESCRIPTOR)}
_SIGN_OUT: dict[Any, Any] = enum_numbers(game_pb2.Sign.DESCRIPTOR)
_DIR_CHOICE_IN: dict[int, Any] = {0: None, **enum_names(game_pb2.DirectionChoice.DESCRIPTOR)}
_DIR_CHOICE_OUT: dict[Any, Any] = enum_numbers(game_pb2.DirectionChoice.DESCRIPTOR)

_DIRECTION_IN: dict[int, Any] = enum_names(game_pb2.Direction.DESCRIPTOR)
_DIRECTION_OUT: dict[Any, Any] = enum_numbers(game_pb2.Direction.DESCRIPTOR)
_PHASE_IN = {n: Phase(str(v)) for n, v in enum_names(state_pb2.Phase.DESCRIPTOR).items()}
_PHASE_OUT: dict[Phase, Any] = {phase: n for n, phase in _PHASE_IN.items()}

_AUDIENCE_OUT: dict[Any, Any] = enum_numbers(events_pb2.Audience.DESCRIPTOR)


def _invalid_state(detail: str) -> RuleError:
    return RuleError(Reason.INVALID_STATE, detail=detail)


def _enum_in(table: Mapping[int, Any], number: int, key: str) -> Any:
    try:
        return table[number]
    except KeyError:
        raise RuleError(Reason.INVALID_OPTION, option=key, value=number) from None


# -- options ---------------------------------------------------------------------------------

_OptionsKey = tuple[
    int,
    int | None,
    int,
    bool | None,
    int | None,
    bool | None,
    int,
    int,
    int | None,
    int,
    int | None,
    int | None,
    int | None,
]


def _opt(msg: game_pb2.Options, name: str) -> Any:
    return getattr(msg, name) if msg.HasField(name) else None  # type: ignore[arg-type]


def options_from_proto(msg: game_pb2.Options) -> Options:
    """Proto options -> :class:`Options`; unset fields take the default/auto. Raises INVALID_OPTION."""
    # Keyed by the wire bytes: one C call instead of thirteen field reads on every request.
    return _options_from_wire(msg.SerializeToString())


@lru_cache(maxsize=256)
def _options_from_wire(data: bytes) -> Options:
    msg = game_pb2.Options.FromString(data)
    key: _OptionsKey = (
        msg.mode,
        _opt(msg, "hand_size"),
        msg.start_total,
        _opt(msg, "refill"),
        _opt(msg, "lives"),
        _opt(msg, "on_the_board"),
        msg.after_elimination,
        msg.floor_at_zero,
        _opt(msg, "special_counts"),
        msg.joker_range,
        _opt(msg, "ace_high"),
        _opt(msg, "deck_count"),
        _opt(msg, "turn_seconds"),
    )
    return _options_from_key(key)


@lru_cache(maxsize=256)
def _options_from_key(key: _OptionsKey) -> Options:
    (mode, hand_size, start_total, refill, lives, board, after, floor, special, joker, ace, decks, secs) = key
    changes: dict[str, object] = {
        "mode": _enum_in(_MODE_IN, mode, "mode"),
        "start_total": _enum_in(_START_TOTAL_IN, start_total, "startTotal"),
        "after_elimination": _enum_in(_AFTER_IN, after, "afterElimination"),
        "floor_at_zero": _enum_in(_FLOOR_IN, floor, "floorAtZero"),
        "joker_range": _enum_in(_JOKER_IN, joker, "jokerRange"),
    }
    for attr, value in (
        ("hand_size", hand_size),
        ("refill", refill),
        ("lives", lives),
        ("on_the_board", board),
        ("special_counts", special),
        ("ace_high", ace),
        ("deck_count", decks),
        ("turn_seconds", secs),
    ):
        if value is not None:
            changes[attr] = value
    return Options(**changes)  # type: ignore[arg-type]  # Options validates every value


def _options_message(options: Options) -> game_pb2.Options:
    # Hashing the frozen Options (13 fields) costs more than building the key of an identity
    # lookup; the Options objects themselves come from _options_from_key's cache.
    hit = _OPTIONS_BY_ID.get(id(options))
    if hit is not None and hit[0] is options:
        return hit[1]
    msg = _options_message_of(options)
    if len(_OPTIONS_BY_ID) >= _IDENTITY_CACHE_SIZE:
        _OPTIONS_BY_ID.clear()
    _OPTIONS_BY_ID[id(options)] = (options, msg)  # holds options: its id cannot be reused meanwhile
    return msg


_IDENTITY_CACHE_SIZE = 1024
_OPTIONS_BY_ID: dict[int, tuple[Options, game_pb2.Options]] = {}


@lru_cache(maxsize=256)
def _options_message_of(options: Options) -> game_pb2.Options:
    msg = game_pb2.Options(
        mode=_MODE_OUT[options.mode],
        start_total=_START_TOTAL_OUT[options.start_total],
        refill=options.refill,
        on_the_board=options.on_the_board,
        after_elimination=_AFTER_OUT[options.after_elimination],
        floor_at_zero=_FLOOR_OUT[options.floor_at_zero],
        special_counts=options.special_counts,
        joker_range=_JOKER_OUT[options.joker_range],
        ace_high=options.ace_high,
        turn_seconds=options.turn_seconds,
    )
    # "auto" stays unset: the proto's way of saying auto.
    if options.hand_size != "auto":
        msg.hand_size = int(options.hand_size)
    if options.lives != "auto":
        msg.lives = int(options.lives)
    if options.deck_count != "auto":
        msg.deck_count = int(options.deck_count)
    return msg


def options_into(options: Options, out: game_pb2.Options) -> None:
    """Write ``options`` into ``out`` (every choice explicit except the ``auto`` ones)."""
    out.CopyFrom(_options_message(options))


def options_to_proto(options: Options) -> game_pb2.Options:
    out = game_pb2.Options()
    options_into(options, out)
    return out


# -- actions ---------------------------------------------------------------------------------


def action_from_proto(msg: game_pb2.Action) -> Action:
    """Proto action -> :class:`Action`. Unknown enum numbers are refused like a missing choice."""
    cid = msg.card_id
    sign = _SIGN_IN.get(msg.sign, "?")
    if sign == "?":
        raise RuleError(Reason.SIGN_REQUIRED, cardId=cid)
    direction = _DIR_CHOICE_IN.get(msg.dir, "?")
    if direction == "?":
        raise RuleError(Reason.DIR_REQUIRED, cardId=cid)
    return Action(
        cid,
        sign=sign,
        ace_value=msg.ace_value if msg.HasField("ace_value") else None,
        joker_value=msg.joker_value if msg.HasField("joker_value") else None,
        dir=direction,
        discard=tuple(msg.discard),
        pair_card_id=msg.pair_card_id if msg.HasField("pair_card_id") else None,
    )


def action_into(action: Action, out: game_pb2.Action) -> None:
    out.card_id = action.card_id
    if action.sign is not None:
        out.sign = _SIGN_OUT[action.sign]
    if action.ace_value is not None:
        out.ace_value = action.ace_value
    if action.joker_value is not None:
        out.joker_value = action.joker_value
    if action.dir is not None:
        out.dir = _DIR_CHOICE_OUT[action.dir]
    if action.discard:
        out.discard.extend(action.discard)
    if action.pair_card_id is not None:
        out.pair_card_id = action.pair_card_id


def action_to_proto(action: Action) -> game_pb2.Action:
    out = game_pb2.Action()
    action_into(action, out)
    return out


def _choice_into(card_id: str, choice: Mapping[str, object], out: game_pb2.Action) -> None:
    """A play's recorded choice (``{"sign": "+"}``...) as the action that made it."""
    out.card_id = card_id
    sign = choice.get("sign")
    if sign is not None:
        out.sign = _SIGN_OUT[str(sign)]
    ace = choice.get("aceValue")
    if ace is not None:
        out.ace_value = int(str(ace))
    joker = choice.get("jokerValue")
    if joker is not None:
        out.joker_value = int(str(joker))
    direction = choice.get("dir")
    if direction is not None:
        out.dir = _DIR_CHOICE_OUT[str(direction)]
    pair = choice.get("pairCardId")
    if pair is not None:
        out.pair_card_id = str(pair)


def _choice_of(msg: game_pb2.Action) -> dict[str, object]:
    choice: dict[str, object] = {}
    sign = _SIGN_IN.get(msg.sign)
    if sign is not None:
        choice["sign"] = sign
    if msg.HasField("ace_value"):
        choice["aceValue"] = msg.ace_value
    if msg.HasField("joker_value"):
        choice["jokerValue"] = msg.joker_value
    direction = _DIR_CHOICE_IN.get(msg.dir)
    if direction is not None:
        choice["dir"] = direction
    if msg.HasField("pair_card_id"):
        choice["pairCardId"] = msg.pair_card_id
    return choice


# -- state -----------------------------------------------------------------------------------


def state_from_proto(msg: state_pb2.State, *, validate: bool = True) -> GameState:
    """Proto state -> :class:`GameState`, checked by :func:`validate_state`. Raises INVALID_STATE."""
    if not msg.HasField("options"):
        raise _invalid_state("options missing")
    if not msg.HasField("rng"):
        raise _invalid_state("rng missing")
    try:
        options = options_from_proto(msg.options)
    except RuleError as err:
        raise _invalid_state(f"options: {err.meta.get('option', '?')}") from None
    direction = _DIRECTION_IN.get(msg.direction)
    if direction is None:
        raise _invalid_state(f"direction {msg.direction}")
    phase = _PHASE_IN.get(msg.phase)
    if phase is None:
        raise _invalid_state(f"phase {msg.phase}")
    ids: list[str] = []
    hands: dict[str, list[str]] = {}
    alive: dict[str, bool] = {}
    lives: dict[str, int] = {}
    on_board: dict[str, bool] = {}
    lives_lost: dict[str, int] = {}
    eliminated_round: dict[str, int] = {}
    names: dict[str, str] = {}
    score: dict[str, int] = {}
    turns_taken: dict[str, int] = {}
    passing: dict[str, str] = {}
    for p in msg.seats:  # one pass: each iteration of a repeated field builds new wrappers
        pid = p.id
        ids.append(pid)
        hands[pid] = p.hand[:]
        alive[pid] = p.alive
        lives[pid] = p.lives
        on_board[pid] = p.on_board
        lives_lost[pid] = p.lives_lost
        if p.HasField("eliminated_round"):
            eliminated_round[pid] = p.eliminated_round
        if p.name:
            names[pid] = p.name
        if p.HasField("score"):
            score[pid] = p.score
        if p.HasField("turns_taken"):
            turns_taken[pid] = p.turns_taken
        if p.HasField("passing"):
            passing[pid] = p.passing
    history = [_record_from_bytes(r.SerializeToString()) for r in msg.history]
    preset = rules_from_wire(msg.rules.SerializeToString()) if msg.HasField("rules") else None
    if preset is None and (msg.round_starter or msg.special_end or passing or msg.exchange_by):
        raise _invalid_state("roundStarter, specialEnd or an exchange without rules")
    if preset is not None:
        fewest, most = preset.players
        if not fewest <= len(ids) <= most:
            raise _invalid_state(f"{len(ids)} seats for {preset.name}")
        if msg.round_starter not in hands:
            raise _invalid_state("roundStarter is not a player")
    rng = msg.rng
    state = GameState(
        state_version=msg.state_version,
        options=options,
        seats=tuple(ids),
        names=names,
        hand_size=msg.hand_size,
        deck_count=msg.deck_count,
        start_lives=msg.start_lives,
        hands=hands,
        draw_pile=msg.draw_pile[:],
        discard=msg.discard[:],
        total=msg.total,
        direction=direction,
        current=msg.current,
        alive=alive,
        lives=lives,
        on_board=on_board,
        lives_lost=lives_lost,
        eliminated_round=eliminated_round,
        elimination_order=list(msg.elimination_order),
        round=msg.round,
        phase=phase,
        turn_started_at=msg.turn_started_at_ms,
        seq=msg.seq,
        rng=RngState(rng.state, rng.inc),
        seed=msg.seed,
        seed_commitment=msg.seed_commitment,
        history=history,
        preset=preset,
        round_starter=msg.round_starter,
        score=score,
        turns_taken=turns_taken,
        special_end=msg.special_end,
        obligation=msg.obligation,
        # the exchange's order: seat order (the rules read it only through the seats)
        passing=passing,
        exchange_by=msg.exchange_by,
        exchange_ends_round=msg.exchange_ends_round,
    )
    if validate:
        validate_state(state)
    return state


def state_into(s: GameState, out: state_pb2.State) -> None:
    """Write ``s`` into the empty message ``out``."""
    out.state_version = s.state_version
    # Options and history: pre-encoded (cached) entries merged in one call; ``out`` is empty.
    out.MergeFromString(_options_entry(s.options) + b"".join(map(_history_entry, s.history)))
    names = s.names
    hands = s.hands
    alive = s.alive
    lives = s.lives
    on_board = s.on_board
    lives_lost = s.lives_lost
    eliminated_round = s.eliminated_round
    score = s.score
    turns_taken = s.turns_taken
    passing = s.passing
    add_seat = out.seats.add
    for pid in s.seats:
        seat = add_seat(
            id=pid,
            name=names.get(pid, ""),
            hand=hands[pid],
            alive=alive[pid],
            lives=lives[pid],
            on_board=on_board[pid],
            lives_lost=lives_lost[pid],
        )
        round_out = eliminated_round.get(pid)
        if round_out is not None:
            seat.eliminated_round = round_out
        if pid in score:
            seat.score = score[pid]
        if pid in turns_taken:
            seat.turns_taken = turns_taken[pid]
        if pid in passing:
            seat.passing = passing[pid]
    out.draw_pile.extend(s.draw_pile)
    out.discard.extend(s.discard)
    out.total = s.total
    out.direction = _DIRECTION_OUT[s.direction]
    out.current = s.current
    out.elimination_order.extend(s.elimination_order)
    out.round = s.round
    out.phase = _PHASE_OUT[s.phase]
    out.turn_started_at_ms = s.turn_started_at
    out.seq = s.seq
    out.rng.state = s.rng.state
    out.rng.inc = s.rng.inc
    out.seed = s.seed
    out.seed_commitment = s.seed_commitment
    out.hand_size = s.hand_size
    out.deck_count = s.deck_count
    out.start_lives = s.start_lives
    if s.preset is not None:
        out.MergeFromString(_rules_entry(s.preset))
        out.round_starter = s.round_starter
        out.special_end = s.special_end
        out.obligation = s.obligation
        out.exchange_by = s.exchange_by
        out.exchange_ends_round = s.exchange_ends_round


# The same ten history records travel back and forth on every move: converting each one once
# (keyed by its wire bytes inbound, by its identity or value outbound) halves the cost of a
# state conversion. Outbound, the options and the whole history go into the State as one
# pre-encoded blob (one MergeFromString instead of one message per record).
_RECORD_CACHE_SIZE = 16384


_STATE_OPTIONS = state_pb2.State.DESCRIPTOR.fields_by_name["options"].number
_STATE_HISTORY = state_pb2.State.DESCRIPTOR.fields_by_name["history"].number
# id(record) -> (record, its State.history entry); holding the record keeps its id from reuse.
_HISTORY_ENTRY_BY_ID: dict[int, tuple[PlayRecord, bytes]] = {}
_OPTIONS_ENTRY_BY_ID: dict[int, tuple[Options, bytes]] = {}
_STATE_RULES = state_pb2.State.DESCRIPTOR.fields_by_name["rules"].number
_RULES_ENTRY_BY_ID: dict[int, tuple[RuleSet, bytes]] = {}


@lru_cache(maxsize=_RECORD_CACHE_SIZE)
def _record_from_bytes(data: bytes) -> PlayRecord:
    r = state_pb2.PlayRecord.FromString(data)
    record = PlayRecord(r.player_id, r.action.card_id, r.face, r.before, r.total, _choice_of(r.action))
    _history_entry(record)  # the record goes back out on the next moves: encode it once now
    return record


@lru_cache(maxsize=_RECORD_CACHE_SIZE)
def _record_bytes(
    player: str, card_id: str, face: str, before: int, total: int, choice: tuple[Any, ...]
) -> bytes:
    entry = state_pb2.PlayRecord(player_id=player, face=face, before=before, total=total)
    _choice_into(card_id, dict(choice), entry.action)
    return entry.SerializeToString()


def _history_entry(r: PlayRecord) -> bytes:
    hit = _HISTORY_ENTRY_BY_ID.get(id(r))
    if hit is not None and hit[0] is r:
        return hit[1]
    # Always re-encoded from the values: nothing a client added (unknown fields) is echoed.
    data = _record_bytes(r.player, r.card_id, r.face, r.before, r.total, tuple(r.choice.items()))
    entry = length_delimited(_STATE_HISTORY, data)
    if len(_HISTORY_ENTRY_BY_ID) >= _RECORD_CACHE_SIZE:
        _HISTORY_ENTRY_BY_ID.clear()
    _HISTORY_ENTRY_BY_ID[id(r)] = (r, entry)
    return entry


def _options_entry(options: Options) -> bytes:
    hit = _OPTIONS_ENTRY_BY_ID.get(id(options))
    if hit is not None and hit[0] is options:
        return hit[1]
    entry = length_delimited(_STATE_OPTIONS, _options_message(options).SerializeToString())
    if len(_OPTIONS_ENTRY_BY_ID) >= _IDENTITY_CACHE_SIZE:
        _OPTIONS_ENTRY_BY_ID.clear()
    _OPTIONS_ENTRY_BY_ID[id(options)] = (options, entry)
    return entry


def _rules_entry(rules: RuleSet) -> bytes:
    hit = _RULES_ENTRY_BY_ID.get(id(rules))
    if hit is not None and hit[0] is rules:
        return hit[1]
    data = rules_to_proto(rules).SerializeToString()
    rules_from_wire(data)  # the rule set comes back with the next move: decode it once now
    entry = length_delimited(_STATE_RULES, data)
    if len(_RULES_ENTRY_BY_ID) >= _IDENTITY_CACHE_SIZE:
        _RULES_ENTRY_BY_ID.clear()
    _RULES_ENTRY_BY_ID[id(rules)] = (rules, entry)
    return entry


def state_to_proto(s: GameState) -> state_pb2.State:
    out = state_pb2.State()
    state_into(s, out)
    return out


# -- events, views and results -----------------------------------------------------------------
# The rules write them in the client protocol's JSON shape; the codec's readers, compiled from the
# descriptors, write that shape into the messages (the inverse of the encoders the gateway sends
# with). Nothing here names one of their fields: tests/engine/test_convert.py checks that the
# readers and the encoders agree on every event and view of random games of every rule set.


@lru_cache(maxsize=256)
def _options_of_items(items: tuple[tuple[str, object], ...]) -> game_pb2.Options:
    return _options_message(Options.from_mapping(dict(items)))


def _parse_options(raw: Mapping[str, object]) -> game_pb2.Options:
    """An options object as the rules write it (``Options.to_mapping``), from the cache."""
    return _options_of_items(tuple(raw.items()))


CODEC = Codec(parsers={game_pb2.Options.DESCRIPTOR.full_name: _parse_options})
_EVENT_MEMBERS = CODEC.member_readers(events_pb2.Event.DESCRIPTOR, "payload")
EVENT_TYPES = frozenset(_EVENT_MEMBERS)
_VIEW = view_pb2.GameView.DESCRIPTOR
_VIEW_OWN = frozenset(_VIEW.GetOptions().Extensions[json_options_pb2.json_message].shared_without)
_read_public_view = CODEC.reader(_VIEW, without=_VIEW_OWN)
_read_private_view = CODEC.reader(_VIEW, without=frozenset(f.name for f in _VIEW.fields) - _VIEW_OWN)
_read_result = CODEC.reader(game_pb2.GameResult.DESCRIPTOR)


def events_into(events: Iterable[Event], out: Any) -> None:
    """Append ``events`` to the repeated ``Event`` field ``out``."""
    add = out.add
    for event in events:
        ev = add(audience=_AUDIENCE_OUT[event.audience.value])
        if event.player is not None:
            ev.player_id = event.player
        field, read = _EVENT_MEMBERS[event.type]
        payload = getattr(ev, field)
        payload.SetInParent()
        read(event.data, payload)


def result_into(d: Mapping[str, Any], out: game_pb2.GameResult) -> None:
    """A :class:`GameResult` in its dict form -> proto."""
    _read_result(d, out)


def view_into(
    view: Mapping[str, Any],
    options: Options,
    out: view_pb2.GameView,
    lang: Lang = "ko",
    rules: RuleSet | None = None,
) -> None:
    """A :func:`player_view` dict -> ``GameView``; refusal texts of choices are in ``lang``
    (``options`` and ``rules``: the game's, for the facts of a refusal's text)."""
    public_view_into(view, out)
    private_view_into(view, options, out, lang, rules)


def public_view_into(view: Mapping[str, Any], out: view_pb2.GameView) -> None:
    """The fields of a :func:`public_view` dict (the same for every viewer, in any language)."""
    _read_public_view(view, out)


def private_view_into(
    view: Mapping[str, Any],
    options: Options,
    out: view_pb2.GameView,
    lang: Lang = "ko",
    rules: RuleSet | None = None,
) -> None:
    """The fields of a :func:`private_view` dict: the viewer, their hand and legal plays, and the
    text of each refused choice in ``lang`` (``options``, ``rules``: as :func:`view_into`)."""
    _read_private_view(view, out)
    for entry in out.hand:
        for choice in entry.choices:
            if choice.reason:
                facts = _reason_facts(options, entry.card.id, rules)
                choice.reason_message = reason_message(Reason(choice.reason), facts, lang)


def _reason_facts(options: Options, card_id: str, rules: RuleSet | None) -> dict[str, str]:
    lo, hi = options.joker_bounds()
    facts = {"cardId": card_id, "ace_high": str(options.ace_high), "min": str(lo), "max": str(hi)}
    kind = _card_type(rules, card_id) if rules is not None else None
    if kind is not None:  # CARD_TOO_EARLY and SAME_NUMBER_TWICE name the rank and the locked turns
        facts |= {"rank": kind.rank, "turns": str(kind.locked_turns)}
    return facts


def _card_type(rules: RuleSet, card_id: str) -> CardType | None:
    """The type of a card by its id (``KS-1``: rank K; ``N7-3``: id prefix N7)."""
    name = card_id.rpartition("-")[0]
    if rules.deck.style is DeckStyle.FRENCH:
        name = name[:-1]
        return next((t for t in rules.deck.cards if t.rank == name), None)
    return next((t for t in rules.deck.cards if t.id_prefix == name), None)
