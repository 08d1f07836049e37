"""``ninety-nine simulate``: play many games in-process with the rules engine and summarise them.

Every number in the summary is a pure function of the arguments, so two runs can be
diffed; only the timing line (games/s) differs, and it is printed apart from the rest
(last line of the text output, or on stderr with ``--json``).

Determinism without Python's ``random``: a master PCG32 (:mod:`ninetynine.engine.rules.rng`)
seeded with ``--seed`` draws one 64-bit game seed per game (high 32 bits first). The game
is set up with that seed, and the moves of the ``random`` policy come from a second PCG32
seeded with the same game seed on stream :data:`PLAY_STREAM` (the engine's own RNG uses
stream 54), so any single game can be replayed from its game seed alone.

Policies:

* ``random``: a uniform pick among the current player's legal (card, choice) pairs as
  :func:`~ninetynine.engine.rules.legal_choices` lists them; a joker (listed at its range's
  two ends) then takes a uniform value within its range.
* ``timeout``: every move is the spec §8.5 automatic move
  (:func:`~ninetynine.engine.rules.timeout_action`).

``--rules NAME`` plays a preset (:mod:`ninetynine.engine.rules.presets`): ``kr-product`` and
``classic`` are ``--mode`` by another name, with ``--option`` their spec options; any other
preset takes ``--option`` as its house rules (:mod:`ninetynine.engine.rules.overrides`) and its
summary names it (``rules``) and counts its turn effects (``effects``). A ``--rules`` name another
game of the registry lists (``trick``) plays that game (:mod:`ninetynine.engine.trick_simulate`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

from ninetynine.engine.rules import (
    Action,
    Event,
    GameState,
    Options,
    Reason,
    Rng,
    RuleError,
    RuleSet,
    apply,
    card_of,
    discard_action,
    legal_choices,
    seed_rng,
    setup,
    timeout_action,
)
from ninetynine.engine.rules.options import CHOICES, KEY_TO_ATTR, check_player_count
from ninetynine.engine.rules.overrides import (
    CARD_EFFECTS,
    CARD_KEY,
    OVERRIDE_KEYS,
    apply_overrides,
    label_options,
)
from ninetynine.engine.rules.presets import PRESETS, preset_names
from ninetynine.engine.rules.ruleset import Op

POLICIES = ("random", "timeout")
PLAY_STREAM = 99
# A game that has not finished after this many moves means the rules loop; stop loudly.
MAX_MOVES_PER_GAME = 100_000
MAX_SEED = (1 << 64) - 1


class SimulationError(Exception):
    """The simulation found an engine fault (a game that does not end)."""


class ConfigError(ValueError):
    """Arguments that do not describe a simulation; the message says what is allowed."""


@dataclass(frozen=True, slots=True)
class SimConfig:
    options: Options
    players: int
    games: int
    seed: int
    policy: str = "random"
    rules: RuleSet | None = None  # a preset other than the spec's modes, house rules applied
    house_rules: tuple[tuple[str, str], ...] = ()  # the --option items that made ``rules``


@dataclass(slots=True)
class Tally:
    """Counters filled game by game; :meth:`summary` turns them into the reported numbers."""

    config: SimConfig
    moves: list[int] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    final_totals: list[int] = field(default_factory=list)
    wins_by_seat: Counter[int] = field(default_factory=Counter)
    wins_by_start_offset: Counter[int] = field(default_factory=Counter)
    eliminations_by_round: Counter[int] = field(default_factory=Counter)
    eliminations_by_reason: Counter[str] = field(default_factory=Counter)
    cards_played: Counter[str] = field(default_factory=Counter)
    choices: Counter[str] = field(default_factory=Counter)
    lives_lost: list[int] = field(default_factory=list)
    reshuffles: int = 0
    direction_changes: int = 0
    effects: Counter[str] = field(default_factory=Counter)  # preset games: skips, plays again, tokens

    def summary(self) -> dict[str, Any]:
        cfg = self.config
        games = len(self.moves)
        total_moves = sum(self.moves)
        total_cards = sum(self.cards_played.values())
        preset: dict[str, Any] = {}
        if cfg.rules is not None:
            preset = {
                "rules": cfg.rules.name,
                "options": dict(cfg.house_rules),
                "effects": {k: self.effects[k] for k in _EFFECTS},
            }
        return {
            "mode": cfg.options.mode,
            "players": cfg.players,
            "games": games,
            "seed": cfg.seed,
            "policy": cfg.policy,
            "options": cfg.options.to_mapping(),
            "moves": {
                "total": total_moves,
                "mean": _round(total_moves / games),
                "p50": _percentile(self.moves, 50),
                "max": max(self.moves),
            },
            "rounds": {"mean": _round(sum(self.rounds) / games), "max": max(self.rounds)},
            "finalTotal": {
                "mean": _round(sum(self.final_totals) / games),
                "min": min(self.final_totals),
                "max": max(self.final_totals),
            },
            "livesLost": {
                "total": sum(self.lives_lost),
                "meanPerGame": _round(sum(self.lives_lost) / games),
            },
            "eliminationsByRound": {str(r): n for r, n in sorted(self.eliminations_by_round.items())},
            "eliminationsByReason": dict(sorted(self.eliminations_by_reason.items())),
            "winsBySeat": {
                str(seat + 1): {
                    "wins": self.wins_by_seat[seat],
                    "rate": _round(self.wins_by_seat[seat] / games),
                }
                for seat in range(cfg.players)
            },
            # 0 = the player who started the game, 1 = the next seat clockwise, ...
            "winsByStartOffset": {
                str(k): {
                    "wins": self.wins_by_start_offset[k],
                    "rate": _round(self.wins_by_start_offset[k] / games),
                }
                for k in range(cfg.players)
            },
            "cardsPlayed": {
                kind: {"count": n, "share": _round(n / total_cards)}
                for kind, n in sorted(self.cards_played.items())
            },
            "choices": dict(sorted(self.choices.items())),
            "reshuffles": self.reshuffles,
            "directionChanges": self.direction_changes,
            **preset,
        }


_EFFECTS = ("turnSkipped", "playAgain", "tokensPaid", "obligationPassed", "secondCardOwed", "cardsDiscarded")


def _round(x: float) -> float:
    return round(x, 4)


def _percentile(values: Sequence[int], pct: int) -> int:
    """Nearest-rank percentile (an actual observed value, so it stays an integer)."""
    ordered = sorted(values)
    rank = max(1, -(-pct * len(ordered) // 100))
    return ordered[rank - 1]


# -- playing -------------------------------------------------------------------------------


def check_config(config: SimConfig) -> None:
    if config.policy not in POLICIES:
        raise ConfigError(f"unknown policy {config.policy!r} (choose from {', '.join(POLICIES)})")
    if config.games < 1:
        raise ConfigError(f"games must be at least 1 (got {config.games})")
    if not 0 <= config.seed <= MAX_SEED:
        raise ConfigError(f"seed must be between 0 and 2**64-1 (got {config.seed})")
    try:
        check_player_count(config.players)
    except RuleError as err:
        raise ConfigError(err.message("en")) from err
    if config.rules is not None:
        fewest, most = config.rules.players
        if not fewest <= config.players <= most:
            raise ConfigError(f"{config.rules.name} seats {fewest} to {most} players (got {config.players})")


def random_action(state: GameState, rng: Rng) -> Action:
    choices = legal_choices(state, state.current)
    if not choices:  # only dead cards: 003's exchange is the one move
        exchange = discard_action(state, state.current)
        assert exchange is not None
        return exchange
    action = choices[rng.below(len(choices))].action
    if action.joker_value is not None:
        plays = card_of(state, action.card_id).type.plays  # type: ignore[union-attr]
        pick = next(p for p in plays if p.op is Op.PICK)
        action = Action(action.card_id, joker_value=pick.lo + rng.below(pick.hi - pick.lo + 1))
    return action


def game_seeds(seed: int, games: int) -> list[int]:
    """The per-game seeds drawn from the master generator (see the module docstring)."""
    master = Rng(seed_rng(seed))
    return [(master.next32() << 32) | master.next32() for _ in range(games)]


def _choice_label(kind: str, choice: Mapping[str, object], options: Options) -> str | None:
    if "sign" in choice:
        return f"{kind} {choice['sign']}"
    if "dir" in choice:
        return f"{kind} {choice['dir']}"
    if "aceValue" in choice:
        return f"{kind} {choice['aceValue']}"
    if "jokerValue" in choice:
        lo, hi = options.joker_bounds()
        value = choice["jokerValue"]
        where = "min" if value == lo else "max" if value == hi else "between"
        return f"{kind} {where}"
    return None


def play_game(config: SimConfig, game_seed: int, tally: Tally) -> None:
    """Play one game to the end with ``config.policy`` and add it to ``tally``."""
    seats = [f"p{i + 1}" for i in range(config.players)]
    state, events = setup(seats, config.options, seed=game_seed, rules=config.rules)
    # setup's first player, even if an automatic loss at the first turn moved the turn on
    starter: str = next(e.data["starter"] for e in events if e.type == "roundStarted")
    play_rng = Rng(seed_rng(game_seed, PLAY_STREAM))
    moves = 0
    lives_lost = 0
    use_timeout = config.policy == "timeout"
    while True:
        lives_lost += _count(events, tally, config.options)
        if state.finished:
            break
        if moves >= MAX_MOVES_PER_GAME:
            raise SimulationError(
                f"game with seed {game_seed} did not finish after {MAX_MOVES_PER_GAME} moves"
            )
        action = timeout_action(state) if use_timeout else random_action(state, play_rng)
        state, events = apply(state, state.current, action)
        moves += 1
    winner = state.current
    seat = state.seats.index(winner)
    tally.wins_by_seat[seat] += 1
    tally.wins_by_start_offset[(seat - state.seats.index(starter)) % config.players] += 1
    tally.moves.append(moves)
    tally.rounds.append(state.round)
    tally.final_totals.append(state.total)
    tally.lives_lost.append(lives_lost)


def _count(events: Sequence[Event], tally: Tally, options: Options) -> int:
    """Add one step's events to ``tally``; return the lives lost in it."""
    lives_lost = 0
    for event in events:
        kind = event.type
        data = event.data
        if kind == "cardPlayed":
            tally.cards_played[data["kind"]] += 1
            label = _choice_label(data["kind"], data["choice"], options)
            if label is not None:
                tally.choices[label] += 1
        elif kind == "eliminated":
            tally.eliminations_by_round[data["round"]] += 1
            tally.eliminations_by_reason[data["reason"]] += 1
        elif kind == "lifeLost":
            lives_lost += 1
        elif kind == "reshuffled":
            tally.reshuffles += 1
        elif kind == "directionChanged":
            tally.direction_changes += 1
        elif kind in _EFFECTS:
            tally.effects[kind] += 1
    return lives_lost


def run_simulation(config: SimConfig, on_progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Play ``config.games`` games and return the deterministic summary (JSON-ready).

    Raises :class:`ConfigError` for a configuration that cannot run and
    :class:`SimulationError` if a game never ends.
    """
    check_config(config)
    tally = Tally(config)
    for done, game_seed in enumerate(game_seeds(config.seed, config.games), start=1):
        play_game(config, game_seed, tally)
        if on_progress is not None:
            on_progress(done)
    return tally.summary()


# -- command line --------------------------------------------------------------------------


def parse_options(mode: str, raw_options: Sequence[str]) -> Options:
    """``["lives=3", "onTheBoard=on"]`` -> :class:`Options`, with errors that say what is allowed."""
    mapping: dict[str, str] = {"mode": mode}
    for item in raw_options:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--option expects key=value, got {item!r}")
        if key == "mode":
            raise ConfigError("set the mode with --mode, not --option mode=...")
        if key in mapping:
            raise ConfigError(f"option {key} given twice")
        mapping[key] = value
    try:
        return Options.from_mapping(mapping)
    except RuleError as err:
        raise ConfigError(_explain(err)) from err


def parse_rules(name: str, raw_options: Sequence[str]) -> SimConfig:
    """``--rules NAME`` with its ``--option`` items: the spec's modes take spec options, any other
    preset takes house rules (``card.K=add``, ``tokens=4``). Players, games, seed and policy are
    the defaults (callers replace them)."""
    if name not in preset_names():
        raise ConfigError(f"unknown rules {name!r} (see `ninety-nine rules list`)")
    if name not in PRESETS:
        return SimConfig(parse_options(name, raw_options), 4, 1000, 0)
    overrides: dict[str, str] = {}
    for item in raw_options:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--option expects key=value, got {item!r}")
        if key.strip() in overrides:
            raise ConfigError(f"option {key.strip()} given twice")
        overrides[key.strip()] = value.strip()
    try:
        rules = apply_overrides(PRESETS[name], overrides)
    except RuleError as err:
        keys = ", ".join([*OVERRIDE_KEYS, f"{CARD_KEY}<rank>"])
        effects = ", ".join(CARD_EFFECTS)
        raise ConfigError(f"{err.message('en')} (house rules: {keys}; a card may be {effects})") from err
    return SimConfig(label_options(rules), 4, 1000, 0, rules=rules, house_rules=tuple(overrides.items()))


def _explain(err: RuleError) -> str:
    text = err.message("en")
    if err.reason is Reason.INVALID_OPTION:
        attr = KEY_TO_ATTR.get(err.meta.get("option", ""))
        if attr is None:
            text += f" (known options: {', '.join(sorted(KEY_TO_ATTR))})"
        else:
            allowed = ", ".join(_show(v) for v in CHOICES[attr][1])
            text += f" (choices: {allowed})"
    return text


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


class ProgressBar:
    """A one-line bar on a terminal stream; silent when the stream is not a TTY."""

    WIDTH = 30
    MIN_INTERVAL_S = 0.1

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total = total
        self.stream = stream
        self.enabled = stream.isatty()
        self.started = time.monotonic()
        self.last_drawn = 0.0
        self.drawn = False

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < self.total and now - self.last_drawn < self.MIN_INTERVAL_S:
            return
        self.last_drawn = now
        filled = self.WIDTH * done // self.total
        rate = done / max(now - self.started, 1e-9)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        self.stream.write(f"\r[{bar}] {done}/{self.total} games  {rate:,.0f} games/s")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()


def format_summary(summary: Mapping[str, Any]) -> str:
    """The human-readable report (deterministic: no timing in it)."""
    games = summary["games"]
    moves = summary["moves"]
    options = ", ".join(f"{k}={_show(v)}" for k, v in summary["options"].items() if k != "mode")
    lines = [
        f"simulated {games} {summary.get('rules', summary['mode'])} games, {summary['players']} players, "
        f"seed {summary['seed']}, policy {summary['policy']}",
        f"options: {options}",
        f"moves per game: mean {moves['mean']:.2f}, p50 {moves['p50']}, max {moves['max']} "
        f"({moves['total']} in all)",
        f"rounds per game: mean {summary['rounds']['mean']:.2f}, max {summary['rounds']['max']}",
        f"final total: mean {summary['finalTotal']['mean']:.2f}, "
        f"min {summary['finalTotal']['min']}, max {summary['finalTotal']['max']}",
        f"lives lost: {summary['livesLost']['total']} in all, "
        f"{summary['livesLost']['meanPerGame']:.2f} per game",
        "eliminations by round: "
        + (", ".join(f"r{r}: {n}" for r, n in summary["eliminationsByRound"].items()) or "none"),
        "eliminations by reason: "
        + (", ".join(f"{r}: {n}" for r, n in summary["eliminationsByReason"].items()) or "none"),
        "wins by seat: "
        + ", ".join(f"{s}: {w['rate'] * 100:.1f}% ({w['wins']})" for s, w in summary["winsBySeat"].items()),
        "wins by offset from the starting player: "
        + ", ".join(
            f"+{k}: {w['rate'] * 100:.1f}% ({w['wins']})" for k, w in summary["winsByStartOffset"].items()
        ),
        "cards played: "
        + ", ".join(f"{k} {c['share'] * 100:.1f}% ({c['count']})" for k, c in summary["cardsPlayed"].items()),
        "choices: " + (", ".join(f"{k}: {n}" for k, n in summary["choices"].items()) or "none"),
        f"reshuffles: {summary['reshuffles']}, direction changes: {summary['directionChanges']}",
    ]
    if "effects" in summary:
        lines.append("effects: " + ", ".join(f"{k}: {n}" for k, n in summary["effects"].items()))
    return "\n".join(lines)


def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return value


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = sub.add_parser(
        "simulate",
        help="play many games in-process and print statistics",
        description="Play many games with the rules engine and print a deterministic summary "
        "(same arguments, same numbers; only the timing line differs).",
    )
    parser.add_argument("--mode", default="kr-product", help="kr-product (default) or classic")
    parser.add_argument(
        "--rules",
        metavar="NAME",
        help="play a preset (`ninety-nine rules list`); --option then sets its house rules",
    )
    parser.add_argument("--players", type=int, default=None, help="players per game, 2-10 (default 4)")
    parser.add_argument("--games", type=_positive_int, default=1000, help="games to play (default 1000)")
    parser.add_argument("--seed", type=_non_negative_int, default=0, help="master seed (default 0)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a game option by its spec key, e.g. lives=3 or onTheBoard=on (repeatable)",
    )
    parser.add_argument(
        "--policy",
        choices=(*POLICIES, "bot", "bot-vs-random"),
        default="random",
        help="how moves are chosen (bot, bot-vs-random: the trick game only)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON (timing on stderr)")
    parser.set_defaults(handler=run_command)
    return parser


def run_command(args: argparse.Namespace) -> int:
    out: TextIO = sys.stdout
    err: TextIO = sys.stderr
    if args.rules is not None:
        from ninetynine.engine import games, trick_simulate

        other = games.kind_listing(args.rules)
        if other is not None:
            return trick_simulate.run_command(other, args)
    if args.players is None:
        args.players = 4
    try:
        if args.policy not in POLICIES:
            raise ConfigError(f"policy {args.policy!r} is for the trick game (--rules trick)")
        if args.rules is None:
            base = SimConfig(parse_options(args.mode, args.option), 4, 1000, 0)
        else:
            base = parse_rules(args.rules, args.option)
        config = replace(base, players=args.players, games=args.games, seed=args.seed, policy=args.policy)
        check_config(config)
    except ConfigError as exc:
        print(f"ninety-nine simulate: error: {exc}", file=err)
        return 2
    progress = ProgressBar(config.games, err)
    started = time.perf_counter()
    try:
        summary = run_simulation(config, progress.update)
    except SimulationError as exc:
        print(f"ninety-nine simulate: engine fault: {exc}", file=err)
        return 1
    finally:
        progress.close()
    elapsed = time.perf_counter() - started
    timing = (
        f"timing: {config.games} games in {elapsed:.2f} s = {config.games / elapsed:,.0f} games/s, "
        f"{elapsed / summary['moves']['total'] * 1e6:.1f} µs per move"
    )
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False), file=out)
        print(timing, file=err)
    else:
        print(format_summary(summary), file=out)
        print(timing, file=out)
    return 0
