"""Record the golden corpus: complete games played against a real engine server, every call kept.

    python -m tests.engine.golden.record            # writes tests/engine/golden/corpus.jsonl.gz
    python -m tests.engine.golden.record --games 20 --out /tmp/corpus.jsonl.gz

It starts ``ninety-nine engine --port 0`` (the production command, as the engine service tests
do) and plays as a client does, over the wire: request bytes out, response bytes back, all kept
(:mod:`tests.engine.golden.corpus` has the format). Every input is a pure function of ``--seed``
and the game number: options, player ids and display names, game seeds, the clock (a fake one,
advanced per move), and each move, picked by a seeded :class:`random.Random` among the current
player's legal plays (those of the View when the client took one, else the rules library's list
for the state, the way ``tests/engine/rules/test_properties.py`` picks). Mixed in: Timeout calls
(the automatic move), Views for players and a spectator after setup, at random points and at the
end, and refused requests of every kind a client can cause, each asked in Korean and in English.

Coverage: both modes, and in each mode every value of every option of
``ninetynine.engine.rules.options.CHOICES`` at least once (the other options of those games drawn at
random; later games favour the shorter games of few lives), 2 to 10 players, a few games under
state version 1. Recording the same seed and game count again gives the same file byte for byte.

Re-record only for an intended behaviour change, as a reviewed change of its own (README.md).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from google.protobuf.message import Message

from ninetynine.engine import convert
from ninetynine.engine.rules import legal_choices
from ninetynine.engine.rules.options import CHOICES, CLASSIC, KR, MAX_PLAYERS, MIN_PLAYERS, Options
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import game_pb2, state_pb2, view_pb2
from tests.engine.golden.corpus import (
    CORPUS_PATH,
    FORMAT,
    FORMAT_VERSION,
    LANGS,
    STATE_FIELD,
    Game,
    RawEngine,
    Refusal,
    b64,
    field_bytes,
    refusal_record,
    split_state,
    unb64,
    with_state,
    write_corpus,
)
from tests.engine.service_fixtures import ROOT, start_engine, stop_engine

# Bump when the recorder plays differently (its next recording then differs on purpose).
RECORDER_VERSION = 1
DEFAULT_SEED = 99
DEFAULT_GAMES = 150
BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z; each game starts a day after the last
DAY_MS = 86_400_000
MAX_CALLS_PER_GAME = 20_000  # far above any game: one that does not end is an engine fault

P_SETUP_REFUSAL = 0.3
P_REFUSAL = 0.05  # per move
P_VIEW_TO_MOVE = 0.1  # the mover's View, whose legal plays the move is then picked from
P_EXTRA_VIEW = 0.04  # someone else's, a spectator's or a stranger's
P_TIMEOUT = 0.08
P_EXPECTED_SEQ = 0.5
P_VIEW_EVERYONE = 0.3  # after setup and at the end: every player's View, else one player's
P_STATE_VERSION_1 = 0.08  # of the kr-product games

# Option values on the wire (game.proto); "auto" for a number is the field left unset.
_ENUMS: dict[str, dict[object, int]] = {
    "mode": {KR: game_pb2.MODE_KR_PRODUCT, CLASSIC: game_pb2.MODE_CLASSIC},
    "start_total": {"auto": game_pb2.START_TOTAL_AUTO, "zero": game_pb2.START_TOTAL_ZERO},
    "after_elimination": {
        "continue": game_pb2.AFTER_ELIMINATION_CONTINUE,
        "reset": game_pb2.AFTER_ELIMINATION_RESET,
    },
    "floor_at_zero": {"forbid": game_pb2.FLOOR_AT_ZERO_FORBID, "clamp": game_pb2.FLOOR_AT_ZERO_CLAMP},
    "joker_range": {"60-99": game_pb2.JOKER_RANGE_60_99, "0-99": game_pb2.JOKER_RANGE_0_99},
}
_DEFAULTS = Options()
# Once every value has had its game: more lives make longer games, not a more thorough corpus.
_SHORTER: dict[tuple[str, str], tuple[object, ...]] = {
    (KR, "lives"): ("auto", 0, 0, 1),
    (CLASSIC, "lives"): (0, 0, 1),
    (KR, "on_the_board"): (False, False, True),
    (CLASSIC, "on_the_board"): (False, False, True),
}
_NAMES = ("지호", "민준", "서연", "하은", "Ann", "Bob", "Chloé", "도윤", "Émile", "수아", "🂡 ace", "ゆい")


# -- what each game is -------------------------------------------------------------------------


def plan_options(games: int, rnd: random.Random) -> list[dict[str, object]]:
    """Option values per game (attribute names): the modes alternate; per mode each game takes,
    for every option, its next value not yet used in that mode, else a random one."""
    if games < 2 * max(len(values) for _key, values in CHOICES.values()):
        raise SystemExit(f"--games {games} is too few to cover every option value in both modes")
    todo = {mode: {attr: list(values) for attr, (_k, values) in CHOICES.items()} for mode in (KR, CLASSIC)}
    plan = []
    for number in range(games):
        mode = (KR, CLASSIC)[number % 2]
        chosen: dict[str, object] = {"mode": mode}
        for attr, (_key, values) in CHOICES.items():
            if attr != "mode":
                left = todo[mode][attr]
                chosen[attr] = left.pop(0) if left else rnd.choice(_SHORTER.get((mode, attr), values))
        plan.append(chosen)
    return plan


def options_message(chosen: dict[str, object], rnd: random.Random) -> game_pb2.Options:
    """The wire options; a default value is sent explicitly in some games and left unset in others."""
    msg = game_pb2.Options()
    for attr, value in chosen.items():
        default = getattr(_DEFAULTS, attr)
        if value == "auto" and attr not in _ENUMS:
            continue
        if value == default and type(value) is type(default) and rnd.random() < 0.5:
            continue
        setattr(msg, attr, _ENUMS[attr][value] if attr in _ENUMS else value)
    return msg


def _player_count(chosen: dict[str, object], rnd: random.Random) -> int:
    """2..10 players, fewer the more lives: a game's length grows with both."""
    options = Options(**chosen)  # type: ignore[arg-type]
    losses = options.resolved_lives() + (1 if options.on_the_board else 0)
    most = {0: MAX_PLAYERS, 1: MAX_PLAYERS, 2: 4, 3: 3}.get(losses, MIN_PLAYERS)
    if rnd.random() < 0.3:
        return rnd.randint(MIN_PLAYERS, most)
    # The smaller of two draws: every count up to the most, small tables more often.
    return min(rnd.randint(MIN_PLAYERS, most), rnd.randint(MIN_PLAYERS, most))


def _player_ids(count: int, rnd: random.Random) -> list[str]:
    style = rnd.choice(("plain", "uuid", "korean"))
    if style == "uuid":
        return [f"{rnd.getrandbits(128):032x}" for _ in range(count)]
    if style == "korean":
        return [f"플레이어-{i + 1}" for i in range(count)]
    return [f"p{i + 1}" for i in range(count)]


def _spec_value(value: object) -> object:
    """An option value as the spec writes it (booleans on/off)."""
    return ("on" if value else "off") if isinstance(value, bool) else value


# -- the client of one game ------------------------------------------------------------------------


@dataclass
class Client:
    """One game's client: the last state it got back, the calls it made, the clock it sends."""

    engine: RawEngine
    rnd: random.Random
    game: Game
    now_ms: int
    refused: Counter[str]  # refusals so far in the whole corpus, by reason
    state_index: int = -1  # the call whose response holds the current state (-1: none)
    state: state_pb2.State = field(default_factory=state_pb2.State)

    def send(self, method: str, request: bytes, note: str, *, chained: bool = True) -> bytes | None:
        """Make one call and keep it: the response bytes, or None for a refusal (then asked in
        every language)."""
        call: dict[str, Any] = {"m": method, "note": note}
        if chained and self.state_index >= 0:
            origin = self.game.calls[self.state_index]
            rest = split_state(request, field_bytes(unb64(origin["ok"]), STATE_FIELD[origin["m"]]))
            if rest is None:
                raise AssertionError(f"{note}: the request does not start with the current state")
            call["from"] = self.state_index
            call["req"] = b64(rest)
        else:
            call["req"] = b64(request)
        if method != "Setup":
            call["seq"] = self.state.seq
        lang = self.rnd.choice(LANGS)
        answer = self.engine.call(method, request, lang)
        response = None
        if isinstance(answer, Refusal):
            by_lang = {lang: answer}
            for other in LANGS:
                if other != lang:
                    again = self.engine.call(method, request, other)
                    if not isinstance(again, Refusal):
                        raise AssertionError(f"{note}: refused in {lang} but not in {other}")
                    by_lang[other] = again
            call["err"] = refusal_record(by_lang)
            self.refused[call["err"]["reason"]] += 1
        else:
            call["lang"] = lang
            call["ok"] = b64(answer)
            response = answer
        self.game.calls.append(call)
        if response is not None and method in STATE_FIELD:
            self.state_index = len(self.game.calls) - 1
            self.state = state_pb2.State.FromString(field_bytes(response, STATE_FIELD[method]))
        return response

    def chained(self, message: Message) -> bytes:
        """``message`` (a request but for its state) with the current state as its field 1."""
        request = with_state(self.state.SerializeToString(), message.SerializeToString(deterministic=True))
        # The very bytes a protobuf client sends for the whole message.
        assert type(message).FromString(request).SerializeToString(deterministic=True) == request
        return request

    def tick(self) -> int:
        self.now_ms += self.rnd.randint(300, 14_000)
        return self.now_ms

    def view(self, viewer: str, note: str) -> view_pb2.GameView | None:
        response = self.send("View", self.chained(pb.ViewRequest(viewer_id=viewer)), note)
        return None if response is None else pb.ViewResponse.FromString(response).view

    def apply(
        self,
        player: str,
        action: game_pb2.Action,
        note: str,
        *,
        expected_seq: int | None = None,
        now_ms: int | None = None,
    ) -> bytes | None:
        request = pb.ApplyRequest(
            player_id=player, action=action, now_ms=self.tick() if now_ms is None else now_ms
        )
        if expected_seq is not None:
            request.expected_seq = expected_seq
        elif self.rnd.random() < P_EXPECTED_SEQ:
            request.expected_seq = self.state.seq
        return self.send("Apply", self.chained(request), note)

    def timeout(self, note: str, *, expected_seq: int | None = None) -> bytes | None:
        """The automatic move, asked for once the turn's deadline has passed."""
        deadline = self.state.turn_started_at_ms + _turn_seconds(self.state) * 1000
        self.now_ms = max(self.now_ms, deadline + self.rnd.randint(0, 1500))
        request = pb.TimeoutRequest(now_ms=self.now_ms)
        if expected_seq is not None:
            request.expected_seq = expected_seq
        elif self.rnd.random() < P_EXPECTED_SEQ:
            request.expected_seq = self.state.seq
        return self.send("Timeout", self.chained(request), note)

    def views_of_everyone(self, note: str) -> None:
        """Every player's View and a spectator's (in most games: one player's and a spectator's)."""
        seats = [seat.id for seat in self.state.seats]
        if self.rnd.random() >= P_VIEW_EVERYONE:
            seats = [self.rnd.choice(seats)]
        for seat in seats:
            self.view(seat, f"{note}: {seat}")
        self.view("", f"{note}: spectator")

    def expect_refusal(self, reason: str, note: str) -> None:
        last = self.game.calls[-1]
        if "err" not in last or last["err"]["reason"] != reason:
            raise AssertionError(f"{self.game.label} {note}: expected {reason}, the engine answered {last}")


def _turn_seconds(state: state_pb2.State) -> int:
    options = state.options
    return options.turn_seconds if options.HasField("turn_seconds") else _DEFAULTS.turn_seconds


def _joker_bounds(state: state_pb2.State) -> tuple[int, int]:
    return (0, 99) if state.options.joker_range == game_pb2.JOKER_RANGE_0_99 else (60, 99)


def pick_move(state: state_pb2.State, view: view_pb2.GameView | None, rnd: random.Random) -> game_pb2.Action:
    """A uniform pick among the mover's legal plays, from the View when the client took one."""
    if view is not None:
        action = game_pb2.Action()
        action.CopyFrom(rnd.choice(view.legal_plays).action)
    else:
        game_state = convert.state_from_proto(state)
        action = convert.action_to_proto(rnd.choice(legal_choices(game_state, game_state.current)).action)
    if action.HasField("joker_value"):  # listed at its range's two ends; every value between is legal
        low, high = _joker_bounds(state)
        action.joker_value = rnd.randint(low, high)
    return action


# -- refusals ------------------------------------------------------------------------------------

Refuse = Callable[["Client", str], object]  # sends one request the engine must refuse


def _play(player: str, **action: Any) -> Refuse:
    return lambda c, note: c.apply(player, game_pb2.Action(**action), note)


def _tampered(method: str, tamper: Callable[[state_pb2.State], None], move: game_pb2.Action) -> Refuse:
    def send(c: Client, note: str) -> None:
        bad = state_pb2.State()
        bad.CopyFrom(c.state)
        tamper(bad)
        request: Any
        if method == "Apply":
            request = pb.ApplyRequest(player_id=bad.current, action=move, now_ms=c.tick())
        elif method == "View":
            request = pb.ViewRequest(viewer_id=c.state.current)
        else:
            request = pb.TimeoutRequest(now_ms=c.tick())
        request.state.CopyFrom(bad)
        c.send(method, request.SerializeToString(deterministic=True), note, chained=False)

    return send


def _doubled_card(s: state_pb2.State) -> None:
    seat = next(seat for seat in s.seats if seat.hand)
    seat.hand.append(seat.hand[0])


_TAMPERINGS: tuple[Callable[[state_pb2.State], None], ...] = (
    lambda s: setattr(s, "total", 150),
    lambda s: setattr(s, "total", -1),
    lambda s: setattr(s, "current", "nobody"),
    lambda s: setattr(s, "state_version", 7),
    _doubled_card,
)


def refusals(c: Client, view: view_pb2.GameView) -> list[tuple[str, Refuse]]:
    """Every refused request the client can build now, each with the reason it must get."""
    state, rnd = c.state, c.rnd
    me = state.current
    move = view.legal_plays[0].action
    kinds: dict[int, str] = {}
    for card in view.hand:
        kinds.setdefault(card.card.kind, card.card.id)
    found: list[tuple[str, Refuse]] = [
        ("CARD_NOT_IN_HAND", _play(me, card_id="N7-99")),
        ("UNKNOWN_PLAYER", _play("mallory", card_id=view.hand[0].card.id)),
    ]
    others = [seat for seat in state.seats if seat.id != me and seat.alive and seat.hand]
    if others:
        other = rnd.choice(others)
        found.append(("NOT_YOUR_TURN", _play(other.id, card_id=other.hand[0])))
        found.append(("CARD_NOT_IN_HAND", _play(me, card_id=rnd.choice(other.hand))))
    if state.draw_pile:
        found.append(("CARD_NOT_IN_HAND", _play(me, card_id=state.draw_pile[-1])))
    for card in view.hand:  # choices the View lists as refused (OVER_99, BELOW_ZERO)
        for choice in card.choices:
            if not choice.legal:
                found.append((choice.reason, _apply_action(me, choice.action)))
    for kind, reason in (
        (game_pb2.CARD_KIND_PLUS_MINUS, "SIGN_REQUIRED"),
        (game_pb2.CARD_KIND_ACE, "ACE_VALUE_REQUIRED"),
        (game_pb2.CARD_KIND_JOKER, "JOKER_VALUE_REQUIRED"),
        (game_pb2.CARD_KIND_ZERO, "DIR_REQUIRED"),
    ):
        if kind in kinds and (kind != game_pb2.CARD_KIND_ZERO or state.state_version >= 2):
            found.append((reason, _play(me, card_id=kinds[kind])))
    if game_pb2.CARD_KIND_PLUS_MINUS in kinds:  # a Sign number the enum does not have
        found.append(("SIGN_REQUIRED", _play(me, card_id=kinds[game_pb2.CARD_KIND_PLUS_MINUS], sign=7)))
    if game_pb2.CARD_KIND_ACE in kinds:
        found.append(("ACE_VALUE_INVALID", _play(me, card_id=kinds[game_pb2.CARD_KIND_ACE], ace_value=5)))
    for card in view.hand:
        if card.card.kind == game_pb2.CARD_KIND_JOKER:
            value = rnd.choice(
                [card.joker_max + 1, 1000] if card.joker_min == 0 else [card.joker_min - 1, 100]
            )
            found.append(("JOKER_OUT_OF_RANGE", _play(me, card_id=card.card.id, joker_value=value)))
        if card.card.kind != game_pb2.CARD_KIND_ZERO:
            found.append(
                ("DIR_NOT_ALLOWED", _play(me, card_id=card.card.id, dir=game_pb2.DIRECTION_CHOICE_KEEP))
            )
        if card.card.kind != game_pb2.CARD_KIND_PLUS_MINUS:
            found.append(("CHOICE_NOT_ALLOWED", _play(me, card_id=card.card.id, sign=game_pb2.SIGN_PLUS)))
    stale = state.seq + 1 if state.seq == 0 or rnd.random() < 0.5 else state.seq - 1
    found += [
        ("STALE_STATE", lambda c, note: c.apply(me, move, note, expected_seq=stale)),
        ("STALE_STATE", lambda c, note: c.timeout(note, expected_seq=state.seq + 1)),
        ("INVALID_STATE", lambda c, note: c.apply(me, move, note, now_ms=2**60)),
        ("INVALID_STATE", _tampered(rnd.choice(("Apply", "View", "Timeout")), rnd.choice(_TAMPERINGS), move)),
    ]
    return found


def _apply_action(player: str, action: game_pb2.Action) -> Refuse:
    return lambda c, note: c.apply(player, action, note)


def refuse_something(c: Client, view: view_pb2.GameView) -> None:
    """Send one request the engine must refuse, of the reason refused least often so far: the
    rare ones (a joker's range, an ace's value) then come up about as often as the rest."""
    found = refusals(c, view)
    fewest = min(c.refused[reason] for reason, _ in found)
    reason, refuse = c.rnd.choice([item for item in found if c.refused[item[0]] == fewest])
    note = f"refused: {reason}"
    refuse(c, note)
    c.expect_refusal(reason, note)


_BAD_OPTIONS: tuple[Callable[[game_pb2.Options], None], ...] = (
    lambda o: setattr(o, "hand_size", 7),
    lambda o: setattr(o, "lives", 4),
    lambda o: setattr(o, "turn_seconds", 25),
    lambda o: setattr(o, "special_counts", 1),
    lambda o: setattr(o, "mode", 9),  # numbers the enums do not have
    lambda o: setattr(o, "joker_range", 5),
)


def refuse_setup(c: Client, good: pb.SetupRequest) -> None:
    """One Setup the engine must refuse: a variant of the game's real one."""
    bad = pb.SetupRequest()
    bad.CopyFrom(good)
    how = c.rnd.choice(("count", "duplicate", "empty id", "stranger's name", "long name", "option", "nowMs"))
    how = "malformed" if c.rnd.random() < 0.15 else how
    if how == "count":
        del bad.player_ids[1:]
        if c.rnd.random() < 0.5:
            bad.player_ids.extend(f"x{i}" for i in range(MAX_PLAYERS))
        bad.display_names.clear()
    elif how == "duplicate":
        bad.player_ids.append(bad.player_ids[0])
    elif how == "empty id":
        bad.player_ids[0] = ""
    elif how == "stranger's name":
        bad.display_names["stranger"] = "누구"
    elif how == "long name":
        bad.display_names[bad.player_ids[0]] = "가" * 65
    elif how == "option":
        c.rnd.choice(_BAD_OPTIONS)(bad.options)
    elif how == "nowMs":
        bad.now_ms = 2**60
    # "malformed": field 1 announcing far more bytes than follow.
    request = b"\x0a\xff\xff\xff\x0f" if how == "malformed" else bad.SerializeToString(deterministic=True)
    c.send("Setup", request, f"refused setup: {how}", chained=False)
    if "err" not in c.game.calls[-1]:
        raise AssertionError(f"{c.game.label}: setup {how} was accepted")


# -- one game ------------------------------------------------------------------------------------


def play_game(
    engine: RawEngine, number: int, chosen: dict[str, object], seed: int, refused: Counter[str]
) -> Game:
    rnd = random.Random(seed * 1_000_003 + number)
    players = _player_count(chosen, rnd)
    ids = _player_ids(players, rnd)
    names = {pid: rnd.choice(_NAMES) for pid in ids if rnd.random() < 0.4}
    spec = {key: _spec_value(chosen[attr]) for attr, (key, _values) in CHOICES.items()}
    game = Game(number, {"mode": chosen["mode"], "players": players, "options": spec})
    c = Client(engine, rnd, game, now_ms=BASE_MS + number * DAY_MS, refused=refused)
    setup = pb.SetupRequest(
        player_ids=ids, options=options_message(chosen, rnd), seed=rnd.getrandbits(64), now_ms=c.now_ms
    )
    setup.display_names.update(names)
    if rnd.random() < P_SETUP_REFUSAL:
        refuse_setup(c, setup)
    if c.send("Setup", setup.SerializeToString(deterministic=True), "setup") is None:
        raise AssertionError(f"{game.label}: setup refused: {game.calls[-1]}")
    if chosen["mode"] == KR and rnd.random() < P_STATE_VERSION_1:
        # A game on under state version 1 (there the 0 card always reverses), which the engine
        # still plays: the client sends its state with that version from here on.
        old = state_pb2.State()
        old.CopyFrom(c.state)
        old.state_version = 1
        request = pb.ViewRequest(viewer_id=old.current)
        request.state.CopyFrom(old)
        c.send("View", request.SerializeToString(deterministic=True), "state version 1", chained=False)
        c.state_index, c.state = -1, old
        game.info["stateVersion"] = 1
    c.views_of_everyone("after setup")
    moves = 0
    while c.state.phase == state_pb2.PHASE_PLAYING:
        if len(game.calls) > MAX_CALLS_PER_GAME:
            raise AssertionError(f"{game.label} does not end")
        me = c.state.current
        refuse = rnd.random() < P_REFUSAL
        view = c.view(me, "to move") if refuse or rnd.random() < P_VIEW_TO_MOVE else None
        if view is not None and not view.legal_plays:
            raise AssertionError(f"{game.label}: no legal play for {me}")
        if view is not None and refuse:
            refuse_something(c, view)
        if rnd.random() < P_EXTRA_VIEW:
            c.view(rnd.choice([*(s.id for s in c.state.seats), "", "intruder"]), "look")
        if rnd.random() < P_TIMEOUT:
            answered = c.timeout("timeout")
        else:
            answered = c.apply(me, pick_move(c.state, view, rnd), "play")
        if answered is None:
            raise AssertionError(f"{game.label}: a legal move was refused: {game.calls[-1]}")
        moves += 1
    c.views_of_everyone("finished")
    c.apply(c.state.current, game_pb2.Action(card_id="N1-1"), "refused: GAME_FINISHED")
    c.expect_refusal("GAME_FINISHED", "play after the end")
    c.timeout("refused: GAME_FINISHED")
    c.expect_refusal("GAME_FINISHED", "timeout after the end")
    game.info["moves"] = moves
    game.info["rounds"] = c.state.round
    return game


# -- the corpus ----------------------------------------------------------------------------------


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


@contextmanager
def running_engine() -> Iterator[RawEngine]:
    """A real engine server (``ninety-nine engine --port 0`` in a subprocess) and a raw client of it."""
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        server = start_engine(Path(tmp))
        engine = RawEngine(server.target)
        try:
            yield engine
        finally:
            engine.close()
            stop_engine(server)


def coverage(games: Sequence[Game]) -> dict[str, dict[str, list[object]]]:
    """Per mode, the values each option took in ``games`` (spec keys and values)."""
    out: dict[str, dict[str, list[object]]] = {}
    for mode in (KR, CLASSIC):
        used = [g.info["options"] for g in games if g.info["mode"] == mode]
        out[mode] = {key: sorted({o[key] for o in used}, key=str) for key in used[0]} if used else {}
    return out


def record(games: int, seed: int) -> tuple[dict[str, Any], list[Game]]:
    plan = plan_options(games, random.Random(seed))
    refused: Counter[str] = Counter()
    with running_engine() as engine:
        played = [play_game(engine, number, chosen, seed, refused) for number, chosen in enumerate(plan)]
    covered = coverage(played)
    for mode, keys in covered.items():
        for key, values in CHOICES.values():
            missing = {str(_spec_value(v)) for v in values} - {str(v) for v in keys[key]}
            if key != "mode" and missing:
                raise AssertionError(f"{mode}: option {key} never took {sorted(missing)}")
    header = {
        "format": FORMAT,
        "formatVersion": FORMAT_VERSION,
        "recorderVersion": RECORDER_VERSION,
        "commit": _git("rev-parse", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "seed": seed,
        "python": sys.version.split()[0],
        "libraries": {name: metadata.version(name) for name in ("protobuf", "grpcio")},
        "games": len(played),
        "calls": sum(len(g.calls) for g in played),
        "playerCounts": sorted({g.info["players"] for g in played}),
        "coverage": covered,
        "refusals": dict(sorted(refused.items())),
    }
    return header, played


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Record the engine's golden corpus (see README.md).")
    parser.add_argument("--games", type=int, default=DEFAULT_GAMES, help="games (default %(default)s)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="master seed (default %(default)s)")
    parser.add_argument("--out", type=Path, default=CORPUS_PATH, help="corpus file (default: the tests')")
    args = parser.parse_args(argv)
    header, games = record(args.games, args.seed)
    if header["dirty"]:
        print("warning: tracked files differ from the commit; the header's commit is not the whole truth")
    write_corpus(args.out, header, games)
    size = args.out.stat().st_size
    print(f"{args.out}: {header['games']} games, {header['calls']} calls, {size / 1e6:.2f} MB")
    print("refusals: " + ", ".join(f"{reason} {n}" for reason, n in header["refusals"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
