"""A rule set (:mod:`ninetynine.engine.rules.ruleset`) as its ``ninetynine.engine.v1.RuleSet`` message.

The mapping is read off the two declarations, not written per field: each dataclass field has the
proto field of the same name; a StrEnum value is the enum value of the same JSON name
(``Effect.PLAY_AGAIN`` = ``"playAgain"`` = ``TURN_EFFECT_PLAY_AGAIN``); ``tuple[X, ...]`` is a
repeated field; a fixed tuple is a message whose fields (a oneof counting as one) are its items in
declaration order, a oneof item taking the member whose type fits the value (``object``); ``X | None``
is an unset message, an UNSPECIFIED enum or an absent ``optional`` scalar. A field added to a
dataclass needs only its proto field; one missing on either side stops the import.

A received rule set is untrusted: :func:`rules_from_wire` refuses with ``INVALID_STATE`` whatever
does not decode (a missing message, an unknown or UNSPECIFIED enum) and whatever :func:`check_rules`
does not accept (sizes, ranges, plays the rules could not resolve, what :func:`unsupported` names).
Decoded rule sets are cached by their bytes, so a game's rule set is one object from request to
request and the caches keyed by identity (the deck's catalogue) keep working.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from abc import ABC, abstractmethod
from enum import StrEnum
from functools import lru_cache
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from ninetynine.common.codec import enum_numbers
from ninetynine.common.v1 import json_options_pb2 as jo
from ninetynine.engine.rules import Reason, RuleError
from ninetynine.engine.rules.cards import RANKS, cards_of
from ninetynine.engine.rules.game import applies
from ninetynine.engine.rules.options import CHOICES, MAX_PLAYERS, MIN_PLAYERS
from ninetynine.engine.rules.ruleset import DeckStyle, EndKind, Op, Play, Refill, RuleSet, When, unsupported
from ninetynine.engine.v1 import game_pb2, rules_pb2

__all__ = ["check_rules", "rules_from_wire", "rules_into", "rules_to_proto"]


def _bad(detail: str) -> RuleError:
    return RuleError(Reason.INVALID_STATE, detail=f"rules{detail}"[:120])


# -- the mapping, built once from the declarations -------------------------------------------------


class _Shape(ABC):
    """How one Python value lives in a proto field (or a oneof).

    Scalars, enums and messages can also be elements of a repeated field (``append``, ``item``);
    optional, repeated and oneof shapes cannot, which the mapping never asks of them.
    """

    @abstractmethod
    def write(self, msg: Any, name: str, value: Any) -> None: ...

    @abstractmethod
    def read(self, msg: Any, name: str, path: str) -> Any: ...

    def append(self, repeated: Any, value: Any) -> None:
        raise TypeError(f"{type(self).__name__} is not an element of a repeated field")

    def item(self, raw: Any, path: str) -> Any:
        """One element of a repeated field."""
        raise TypeError(f"{type(self).__name__} is not an element of a repeated field")


_SCALAR_CPP = {
    str: {FieldDescriptor.CPPTYPE_STRING},
    bool: {FieldDescriptor.CPPTYPE_BOOL},
    int: {
        FieldDescriptor.CPPTYPE_INT32,
        FieldDescriptor.CPPTYPE_INT64,
        FieldDescriptor.CPPTYPE_UINT32,
        FieldDescriptor.CPPTYPE_UINT64,
    },
}


class _Scalar(_Shape):
    def __init__(self, py: type, field: FieldDescriptor) -> None:
        if field.cpp_type not in _SCALAR_CPP[py]:
            raise TypeError(f"{field.full_name}: a {py.__name__} needs a {py.__name__} field")

    def write(self, msg: Any, name: str, value: Any) -> None:
        setattr(msg, name, value)

    def append(self, repeated: Any, value: Any) -> None:
        repeated.append(value)

    def read(self, msg: Any, name: str, path: str) -> Any:
        return getattr(msg, name)

    def item(self, raw: Any, path: str) -> Any:
        return raw


class _Enum(_Shape):
    def __init__(self, py: type[StrEnum], field: FieldDescriptor) -> None:
        assert field.enum_type is not None
        numbers = enum_numbers(field.enum_type)
        missing = [m.value for m in py if m.value not in numbers]
        if missing:
            raise TypeError(f"{field.full_name}: no enum values for {missing}")
        self.out = {m: numbers[m.value] for m in py}
        self.back = {n: m for m, n in self.out.items()}

    def write(self, msg: Any, name: str, value: Any) -> None:
        setattr(msg, name, self.out[value])

    def append(self, repeated: Any, value: Any) -> None:
        repeated.append(self.out[value])

    def read(self, msg: Any, name: str, path: str) -> Any:
        return self.item(getattr(msg, name), path)

    def item(self, raw: Any, path: str) -> Any:
        try:
            return self.back[raw]
        except KeyError:
            raise _bad(f"{path}: enum {raw}") from None


class _Composite(_Shape):
    """A message-valued field: a dataclass or a fixed tuple."""

    @abstractmethod
    def fill(self, value: Any, msg: Any) -> None: ...

    @abstractmethod
    def build(self, msg: Any, path: str) -> Any: ...

    def write(self, msg: Any, name: str, value: Any) -> None:
        sub = getattr(msg, name)
        sub.SetInParent()
        self.fill(value, sub)

    def append(self, repeated: Any, value: Any) -> None:
        self.fill(value, repeated.add())

    def read(self, msg: Any, name: str, path: str) -> Any:
        if not msg.HasField(name):
            raise _bad(f"{path}: missing")
        return self.build(getattr(msg, name), path)

    def item(self, raw: Any, path: str) -> Any:
        return self.build(raw, path)


class _Optional(_Shape):
    """``X | None``: None is an unset message, a zero enum or an absent ``optional`` scalar."""

    def __init__(self, inner: _Shape, field: FieldDescriptor) -> None:
        self.inner = inner
        self.presence = field.type != FieldDescriptor.TYPE_ENUM
        if self.presence and not field.has_presence:
            raise TypeError(f"{field.full_name}: a None-able value needs a field with presence")

    def write(self, msg: Any, name: str, value: Any) -> None:
        if value is not None:
            self.inner.write(msg, name, value)

    def read(self, msg: Any, name: str, path: str) -> Any:
        if self.presence:
            return self.inner.read(msg, name, path) if msg.HasField(name) else None
        return None if getattr(msg, name) == 0 else self.inner.read(msg, name, path)


class _Repeated(_Shape):
    def __init__(self, inner: _Shape) -> None:
        self.inner = inner

    def write(self, msg: Any, name: str, value: Any) -> None:
        repeated = getattr(msg, name)
        for v in value:
            self.inner.append(repeated, v)

    def read(self, msg: Any, name: str, path: str) -> Any:
        return tuple(self.inner.item(raw, f"{path}[{i}]") for i, raw in enumerate(getattr(msg, name)))


class _Oneof(_Shape):
    """An ``object`` item of a fixed tuple: the oneof member whose type fits, or none for None."""

    _PY: typing.ClassVar[dict[int, type]] = {
        FieldDescriptor.CPPTYPE_STRING: str,
        FieldDescriptor.CPPTYPE_BOOL: bool,
    }

    def __init__(self, members: list[FieldDescriptor]) -> None:
        self.by_type: dict[type, str] = {}
        for f in members:
            self.by_type[self._PY.get(f.cpp_type, int)] = f.name
        self.oneof = members[0].containing_oneof.name  # type: ignore[union-attr]

    def write(self, msg: Any, name: str, value: Any) -> None:
        if value is not None:
            setattr(msg, self.by_type[type(value)], value)

    def read(self, msg: Any, name: str, path: str) -> Any:
        which = msg.WhichOneof(self.oneof)
        return None if which is None else getattr(msg, which)


class _Tuple(_Composite):
    def __init__(self, args: tuple[Any, ...], descriptor: Descriptor, owner: type) -> None:
        slots: list[tuple[str, FieldDescriptor | list[FieldDescriptor]]] = []
        for f in descriptor.fields:
            oneof = f.containing_oneof
            if oneof is None or len(oneof.fields) == 1:  # a proto3 optional's oneof is its own
                slots.append((f.name, f))
            elif oneof.fields[0] is f:
                slots.append((oneof.name, list(oneof.fields)))
        if len(slots) != len(args):
            raise TypeError(f"{descriptor.full_name}: {len(slots)} items for {args}")
        self.slots = [
            (name, _Oneof(f) if isinstance(f, list) else _shape_of(arg, f, owner))
            for (name, f), arg in zip(slots, args, strict=True)
        ]

    def fill(self, value: Any, msg: Any) -> None:
        for (name, shape), v in zip(self.slots, value, strict=True):
            shape.write(msg, name, v)

    def build(self, msg: Any, path: str) -> Any:
        return tuple(shape.read(msg, name, f"{path}.{name}") for name, shape in self.slots)


class _Dataclass(_Composite):
    def __init__(self, cls: type, descriptor: Descriptor) -> None:
        self.cls = cls
        hints = typing.get_type_hints(cls)
        names = [f.name for f in dataclasses.fields(cls)]
        extra = set(descriptor.fields_by_name) - set(names)
        missing = [n for n in names if n not in descriptor.fields_by_name]
        if missing or extra:
            raise TypeError(
                f"{cls.__name__} / {descriptor.full_name}: missing {missing}, extra {sorted(extra)}"
            )
        self.fields = [(n, _shape_of(hints[n], descriptor.fields_by_name[n], cls)) for n in names]

    def fill(self, value: Any, msg: Any) -> None:
        for name, shape in self.fields:
            shape.write(msg, name, getattr(value, name))

    def build(self, msg: Any, path: str) -> Any:
        return self.cls(**{name: shape.read(msg, name, f"{path}.{name}") for name, shape in self.fields})


def _shape_of(hint: Any, field: FieldDescriptor, owner: type) -> _Shape:
    """The shape of a value annotated ``hint`` in ``field``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union) and type(None) in args:
        (inner,) = (a for a in args if a is not type(None))
        return _Optional(_shape_of(inner, field, owner), field)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        if not field.is_repeated:
            raise TypeError(f"{field.full_name}: {hint} needs a repeated field")
        return _Repeated(_element(args[0], field, owner))
    if field.is_repeated:
        raise TypeError(f"{field.full_name} is repeated but {owner.__name__} holds {hint}")
    return _element(hint, field, owner)


def _element(hint: Any, field: FieldDescriptor, owner: type) -> _Shape:
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        if field.type != FieldDescriptor.TYPE_ENUM:
            raise TypeError(f"{field.full_name}: {hint.__name__} needs an enum field")
        return _Enum(hint, field)
    if dataclasses.is_dataclass(hint):
        assert field.message_type is not None, field.full_name
        return _Dataclass(hint, field.message_type)  # type: ignore[arg-type]
    if typing.get_origin(hint) is tuple:
        assert field.message_type is not None, field.full_name
        return _Tuple(typing.get_args(hint), field.message_type, owner)
    if hint in _SCALAR_CPP:
        return _Scalar(hint, field)
    raise TypeError(f"{owner.__name__}.{field.name}: no mapping for {hint}")


_RULESET = _Dataclass(RuleSet, rules_pb2.RuleSet.DESCRIPTOR)


def rules_into(rules: RuleSet, out: rules_pb2.RuleSet) -> None:
    """Write ``rules`` into ``out`` (an empty message)."""
    _RULESET.fill(rules, out)


def rules_to_proto(rules: RuleSet) -> rules_pb2.RuleSet:
    out = rules_pb2.RuleSet()
    rules_into(rules, out)
    return out


# -- a received rule set ---------------------------------------------------------------------------


@lru_cache(maxsize=256)
def rules_from_wire(data: bytes) -> RuleSet:
    """A ``RuleSet`` message's bytes -> the checked :class:`RuleSet`; raises INVALID_STATE."""
    if len(data) > MAX_RULES_BYTES:  # every preset is under 1 KiB: refuse before decoding
        raise _bad(f": {len(data)} bytes")
    msg: Message = rules_pb2.RuleSet.FromString(data)
    rules: RuleSet = _RULESET.build(msg, "")
    check_rules(rules)
    return rules


# Bounds on what a state may describe: room for every preset, nothing a client could inflate.
MAX_RULES_BYTES = 8192
MAX_CARD_TYPES = 16
MAX_PLAYS = 4
MAX_CARDS = 200  # GameStarted.deck_size's bound
MAX_ROWS = 10
MAX_THRESHOLDS = 8
MAX_TOKENS = 10
MAX_TEXT = 200
MAX_TARGET = 100  # a points target (the view's score bound allows the last round's points over it)
MAX_ROUNDS = 10  # a game of rounds: at most a few dozen points a round, under the view's score bound
MAX_SPECIAL_HANDS = 4
MAX_LOCKED_TURNS = 20
MAX_PAIRS = 8
MAX_POINTS = 10  # game points one crossing or one card in hand scores (END_KIND_ROUNDS)
MAX_HAND_POINTS = 50  # what one card left in a hand, or going out of a round, may score
_NAME = re.compile(r"^[a-z0-9][a-zA-Z0-9+-]{0,63}$")  # "na-standard", "classic+exact99Bonus"
_SELECT_TEXT = {"sign": ("+", "-"), "dir": ("keep", "reverse")}
_ACE_VALUES = (1, 10, 11)


def _card_id_pattern() -> re.Pattern[str]:
    defs = game_pb2.DESCRIPTOR.GetOptions().Extensions[jo.json_def]
    (card_id,) = (d for d in defs if d.name == "CardId")
    return re.compile(card_id.bounds.pattern)


_CARD_ID = _card_id_pattern()


def _rows(rows: tuple[tuple[int, int], ...], path: str, lo: int, hi: int, *, ascending: bool = True) -> None:
    if len(rows) > MAX_ROWS:
        raise _bad(f"{path}: {len(rows)} rows")
    players = [p for p, _ in rows]
    if any(not MIN_PLAYERS <= p <= MAX_PLAYERS for p in players):
        raise _bad(f"{path}: player count out of {MIN_PLAYERS}..{MAX_PLAYERS}")
    if ascending and players != sorted(set(players)):
        raise _bad(f"{path}: rows not in ascending player order")
    if any(not lo <= v <= hi for _, v in rows):
        raise _bad(f"{path}: value out of {lo}..{hi}")


def _totals(rules: RuleSet) -> range:
    """Every total a play may start from."""
    return range(0, rules.limit + 1)


def _check_plays(rules: RuleSet, rank: str, plays: tuple[Play, ...], path: str) -> None:
    if len(plays) > MAX_PLAYS:  # none: a card that is never played (003's ONO 99)
        raise _bad(f"{path}: {len(plays)} plays")
    for i, p in enumerate(plays):
        where = f"{path}[{i}]"
        if not -99 <= p.amount <= 99:
            raise _bad(f"{where}.amount {p.amount}")
        if p.op is Op.SET and not 0 <= p.amount <= rules.limit:
            raise _bad(f"{where}: sets {p.amount}")
        picks = p.op is Op.PICK
        if picks and not 0 <= p.lo <= p.hi <= rules.limit:
            raise _bad(f"{where}: range {p.lo}..{p.hi}")
        field, value = p.select if p.select is not None else (None, None)
        if field is not None and field not in ("jokerValue", "aceValue", *_SELECT_TEXT):
            raise _bad(f"{where}.select {field!r}")
        if picks != (field == "jokerValue"):
            raise _bad(f"{where}: a range needs jokerValue and only a range takes it")
        if field in _SELECT_TEXT and value not in _SELECT_TEXT[field]:
            raise _bad(f"{where}.select {field}={value!r}")
        if field == "aceValue" and value not in _ACE_VALUES:
            raise _bad(f"{where}.select aceValue={value!r}")
        if field == "jokerValue" and value is not None:
            raise _bad(f"{where}.select jokerValue takes no value")
    # The rules resolve an action from the plays that apply to the total: at every total one
    # play applies alone, or several do and one field's distinct values tell them apart.
    conditions = {p.when for p in plays}
    for total in _totals(rules) if conditions != {When.ALWAYS} else (0,):
        live = [p for p in plays if applies(p, total)]
        if not live:  # not playable at this total (003's ONO 99 on a total not ending in 0)
            continue
        selects = [p.select for p in live if p.select is not None]
        fields = {s[0] for s in selects}
        alone = len(live) == 1 and (not selects or len(fields) == 1)
        told_apart = (
            len(selects) == len(live) and len(fields) == 1 and len({s[1] for s in selects}) == len(live)
        )
        if not (alone or told_apart) or (fields == {"jokerValue"} and len(live) != 1):
            raise _bad(f"{path}: card {rank} has no single play at total {total}")


def check_rules(rules: RuleSet) -> None:
    """Refuse (INVALID_STATE) a rule set the engine cannot play or that exceeds the bounds."""
    for name, text in (("summary", rules.summary), ("summaryEn", rules.summary_en), ("source", rules.source)):
        if len(text) > MAX_TEXT:
            raise _bad(f".{name}: longer than {MAX_TEXT}")
    if not _NAME.match(rules.name):
        raise _bad(".name")
    if not 10 <= rules.limit <= 99:
        raise _bad(f".limit {rules.limit}")
    fewest, most = rules.players
    if not MIN_PLAYERS <= fewest <= most <= MAX_PLAYERS:
        raise _bad(f".players {fewest}..{most}")
    if rules.turn_seconds not in CHOICES["turn_seconds"][1]:
        raise _bad(f".turnSeconds {rules.turn_seconds}")
    _check_deck(rules)
    hand = rules.hand
    if not 1 <= hand.size <= 10 or not 0 <= hand.refill_to <= 10:
        raise _bad(".hand: size")
    if hand.refill is Refill.UP_TO and hand.refill_to < 1:
        raise _bad(".hand: refillTo")
    if not 0 <= rules.start.total <= rules.limit:
        raise _bad(f".start.total {rules.start.total}")
    _rows(rules.start.by_players, ".start.byPlayers", 0, rules.limit, ascending=False)
    tokens = rules.tokens
    if not tokens.start_by_players:
        raise _bad(".tokens.startByPlayers: empty")
    _rows(tokens.start_by_players, ".tokens.startByPlayers", 0, MAX_TOKENS)
    if len(rules.thresholds) > MAX_THRESHOLDS:
        raise _bad(f".thresholds: {len(rules.thresholds)}")
    for i, t in enumerate(rules.thresholds):
        # a threshold pays tokens or scores points (END_KIND_ROUNDS), or both
        paid = 1 <= t.tokens <= MAX_TOKENS or (t.tokens == 0 and t.points != 0)
        if not 0 <= t.at <= rules.limit or not paid or not -MAX_POINTS <= t.points <= MAX_POINTS:
            raise _bad(f".thresholds[{i}]")
    _check_pairs(rules)
    if not 0 <= rules.end.target <= (MAX_ROUNDS if rules.end.kind is EndKind.ROUNDS else MAX_TARGET):
        raise _bad(".end.target")
    if len(rules.special_hands) > MAX_SPECIAL_HANDS:
        raise _bad(f".specialHands: {len(rules.special_hands)}")
    ranks = {t.rank for t in rules.deck.cards}
    if any(h.rank not in ranks for h in rules.special_hands):
        raise _bad(".specialHands: a rank the deck does not have")
    if len(rules.hand_scores) > MAX_CARD_TYPES or not 0 <= rules.round_out_points <= MAX_HAND_POINTS:
        raise _bad(".handScores")
    for i, h in enumerate(rules.hand_scores):
        suit_ok = h.suit in ("", "S", "H", "D", "C")
        if h.rank not in ranks or not suit_ok or not -MAX_HAND_POINTS <= h.points <= MAX_HAND_POINTS:
            raise _bad(f".handScores[{i}]")
    # Last: ``unsupported`` reads the rule set as the rules do, so only once it is within bounds.
    missing = unsupported(rules)
    if missing:
        raise _bad(f": not played: {', '.join(missing)}")


def _check_pairs(rules: RuleSet) -> None:
    ranks = {t.rank for t in rules.deck.cards}
    if len(rules.pairs) > MAX_PAIRS or len({p.rank for p in rules.pairs}) != len(rules.pairs):
        raise _bad(f".pairs: {len(rules.pairs)}")
    for i, pair in enumerate(rules.pairs):
        path = f".pairs[{i}]"
        if pair.rank not in ranks:
            raise _bad(f"{path}: a rank the deck does not have")
        if any(p.op is Op.PICK or (p.select is not None and p.select[0] != "dir") for p in pair.plays):
            raise _bad(f"{path}: a pair chooses its play by dir only")
        _check_plays(rules, pair.rank, pair.plays, f"{path}.plays")
        points = pair.cross_points if pair.cross_points is not None else 0
        if not -MAX_POINTS <= points <= MAX_POINTS or not 0 <= pair.cross_take <= MAX_POINTS:
            raise _bad(f"{path}: points")
    for i, t in enumerate(rules.deck.cards):
        points = t.cross_points if t.cross_points is not None else 0
        if not -MAX_POINTS <= points <= MAX_POINTS:
            raise _bad(f".deck.cards[{i}].crossPoints")


def _check_deck(rules: RuleSet) -> None:
    deck = rules.deck
    if not 1 <= len(deck.cards) <= MAX_CARD_TYPES:
        raise _bad(f".deck.cards: {len(deck.cards)} types")
    if not deck.decks_by_players:
        raise _bad(".deck.decksByPlayers: empty")
    _rows(deck.decks_by_players, ".deck.decksByPlayers", 1, 2)
    allowed = deck.allowed_deck_counts
    if not allowed or not set(allowed) <= {1, 2} or len(set(allowed)) != len(allowed):
        raise _bad(".deck.allowedDeckCounts")
    if any(d not in allowed for _, d in deck.decks_by_players):
        raise _bad(".deck: a deck count it does not allow")
    ranks = [t.rank for t in deck.cards]
    if len(set(ranks)) != len(ranks):
        raise _bad(".deck.cards: a rank twice")
    if deck.style is DeckStyle.FRENCH and sorted(ranks) != sorted(RANKS):
        raise _bad(".deck.cards: a French deck lists the 13 ranks")
    if deck.style is DeckStyle.NUMBERED:
        prefixes = [t.id_prefix for t in deck.cards]
        if len(set(prefixes)) != len(prefixes):
            raise _bad(".deck.cards: an idPrefix twice")
    for i, t in enumerate(deck.cards):
        path = f".deck.cards[{i}]"
        if not 1 <= len(t.rank) <= 6 or not t.rank.isprintable():
            raise _bad(f"{path}.rank")
        if not 0 <= t.value <= 10 or not 0 <= t.timeout_class <= 9 or not 0 <= t.count <= 99:
            raise _bad(f"{path}: value, timeoutClass or count")
        if not 0 <= t.locked_turns <= MAX_LOCKED_TURNS:
            raise _bad(f"{path}.lockedTurns {t.locked_turns}")
        _check_plays(rules, t.rank, t.plays, f"{path}.plays")
    if not any(t.plays and all(p.op is Op.ADD and p.amount > 0 for p in t.plays) for t in deck.cards):
        raise _bad(".deck: no card only raises the total (the game would never end)")
    for decks in sorted(set(allowed)):
        cards = cards_of(deck, decks)
        if not 1 <= len(cards) <= MAX_CARDS:
            raise _bad(f".deck: {len(cards)} cards")
        bad = next((c.id for c in cards if not _CARD_ID.match(c.id)), None)
        if bad is not None:
            raise _bad(f".deck: card id {bad[:12]!r}")
