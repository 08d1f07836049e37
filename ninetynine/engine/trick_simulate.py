"""``ninety-nine simulate --rules trick``: many trick-taking matches in-process, summarised.

The trick game's side of :mod:`ninetynine.engine.simulate`, reached through the game registry
(:mod:`ninetynine.engine.games`: its pure rules and bot). The same determinism: a master PCG32
seeded with ``--seed`` draws one seed per match (:func:`~ninetynine.engine.simulate.game_seeds`);
the random moves come from a PCG32 seeded with the match seed on stream ``PLAY_STREAM``. Every
number is a function of the arguments; only the timing line differs between runs.

Policies: ``random`` (any 3 cards as the bid, any legal action, announce and pass alike),
``timeout`` (the timeout policy for every decision), ``bot`` (the bot in every seat) and
``bot-vs-random`` (the bot in seat 0, random players in the others: the bot's win rate).

The summary: deals per match, contracts made (per deal: how many of the three made theirs),
declarer success (deals with a declarer, how many made their contract, deals nobody declared),
wins by seat (shared wins count for each), matches ended by the deal cap, and the winning score.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, TextIO

from ninetynine.engine.games import GameKind
from ninetynine.engine.rules.rng import Rng, seed_rng
from ninetynine.engine.simulate import PLAY_STREAM, ConfigError, ProgressBar, game_seeds
from ninetynine.engine.trick import TrickAction, TrickError, TrickOptions, TrickPhase, TrickState, pending

__all__ = ["POLICIES", "TrickSimConfig", "format_summary", "run_command", "run_simulation"]

POLICIES = ("random", "timeout", "bot", "bot-vs-random")
SEATS = ("p1", "p2", "p3")
MAX_MOVES_PER_MATCH = 60 * 40


@dataclass(frozen=True, slots=True)
class TrickSimConfig:
    kind: GameKind
    options: TrickOptions
    matches: int
    seed: int
    policy: str


def _random(state: TrickState, player: str, rng: Rng, kind: GameKind) -> TrickAction:
    if state.phase is TrickPhase.BIDDING:
        hand = list(state.hands[player])
        rng.shuffle(hand)
        return TrickAction.bid(*hand[:3])
    legal: list[TrickAction] = kind.rules.legal_actions(state, player)
    return legal[rng.below(len(legal))]


def _action(config: TrickSimConfig, state: TrickState, player: str, rng: Rng) -> TrickAction:
    kind = config.kind
    policy = config.policy
    if policy == "bot" or (policy == "bot-vs-random" and player == SEATS[0]):
        assert kind.rules.bot is not None
        action: TrickAction = kind.rules.bot(state, player)
        return action
    if policy == "timeout":
        timed: TrickAction = kind.rules.timeout_action(state, player)
        return timed
    return _random(state, player, rng, kind)


def play_match(config: TrickSimConfig, match_seed: int) -> tuple[TrickState, int]:
    """One match to its end; the final state and the number of decisions taken."""
    rules = config.kind.rules
    state, _ = rules.setup(SEATS, config.options, seed=match_seed)
    rng = Rng(seed_rng(match_seed, PLAY_STREAM))
    moves = 0
    while not state.finished:
        waiting = pending(state)
        player = waiting[rng.below(len(waiting))] if len(waiting) > 1 else waiting[0]
        state, _ = rules.apply(state, player, _action(config, state, player, rng), now_ms=moves)
        moves += 1
        if moves > MAX_MOVES_PER_MATCH:
            raise RuntimeError(f"match seed {match_seed} did not end after {moves} decisions")
    return state, moves


def _mean(values: list[int]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def run_simulation(config: TrickSimConfig, on_progress: Any = None) -> dict[str, Any]:
    deals: list[int] = []
    moves: list[int] = []
    made_per_deal: Counter[int] = Counter()
    wins: Counter[int] = Counter()
    declared = declared_made = no_declarer = shared = capped = 0
    winning: list[int] = []
    for done, match_seed in enumerate(game_seeds(config.seed, config.matches), 1):
        state, taken = play_match(config, match_seed)
        deals.append(len(state.deals))
        moves.append(taken)
        for record in state.deals:
            made_per_deal[record.contracts_made] += 1
            if record.declarer is None:
                no_declarer += 1
            else:
                declared += 1
                declared_made += next(ln.made for ln in record.lines if ln.player == record.declarer)
        for seat, player in enumerate(SEATS):
            wins[seat] += player in state.winners
        shared += len(state.winners) > 1
        top = max(state.scores.values())
        capped += top < config.options.target
        winning.append(top)
        if on_progress is not None:
            on_progress(done)
    total_deals = sum(deals)
    made = sum(n * count for n, count in made_per_deal.items())
    return {
        "game": "trick",
        "rules": config.kind.name,
        "matches": config.matches,
        "players": len(SEATS),
        "seed": config.seed,
        "policy": config.policy,
        "options": config.options.to_mapping(),
        "dealsPerMatch": {
            "mean": _mean(deals),
            "p50": sorted(deals)[len(deals) // 2],
            "max": max(deals),
            "total": total_deals,
        },
        "decisionsPerMatch": {"mean": _mean(moves), "max": max(moves), "total": sum(moves)},
        "contractsMade": {
            "perDeal": {str(n): made_per_deal[n] for n in range(4)},
            "rate": round(made / (len(SEATS) * total_deals), 4),
        },
        "declarer": {
            "deals": declared,
            "made": declared_made,
            "successRate": round(declared_made / declared, 4) if declared else 0.0,
            "noDeclarer": no_declarer,
        },
        "winsBySeat": {
            str(seat): {"wins": wins[seat], "rate": round(wins[seat] / config.matches, 4)}
            for seat in range(len(SEATS))
        },
        "sharedWins": shared,
        "endedByDealCap": capped,
        "winningScore": {"mean": _mean(winning), "max": max(winning)},
    }


def format_summary(summary: dict[str, Any]) -> str:
    deals, made, dec = summary["dealsPerMatch"], summary["contractsMade"], summary["declarer"]
    options = ", ".join(f"{k}={v}" for k, v in summary["options"].items())
    per_deal = ", ".join(f"{n} made: {c}" for n, c in made["perDeal"].items())
    lines = [
        f"simulated {summary['matches']} trick-taking matches, 3 players, seed {summary['seed']}, "
        f"policy {summary['policy']}",
        f"options: {options}",
        f"deals per match: mean {deals['mean']:.2f}, p50 {deals['p50']}, max {deals['max']} "
        f"({deals['total']} in all)",
        f"contracts made: {made['rate'] * 100:.1f}% of contracts; per deal {per_deal}",
        f"declarer success: {dec['made']}/{dec['deals']} = {dec['successRate'] * 100:.1f}%; "
        f"no declarer in {dec['noDeclarer']} deals",
        "wins by seat: "
        + ", ".join(f"{s}: {w['rate'] * 100:.1f}% ({w['wins']})" for s, w in summary["winsBySeat"].items())
        + f"; shared wins {summary['sharedWins']}, ended by the deal cap {summary['endedByDealCap']}",
        f"winning score: mean {summary['winningScore']['mean']:.1f}, max {summary['winningScore']['max']}",
    ]
    return "\n".join(lines)


def parse_config(kind: GameKind, args: argparse.Namespace) -> TrickSimConfig:
    if args.players not in (None, 3):
        raise ConfigError("the trick game is for exactly 3 players")
    if args.policy not in POLICIES:
        raise ConfigError(f"policy {args.policy!r}: the trick game takes {', '.join(POLICIES)}")
    raw: dict[str, str] = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--option expects key=value, got {item!r}")
        raw[key.strip()] = value.strip()
    try:
        options = TrickOptions.from_mapping(raw)
    except TrickError as err:
        raise ConfigError(f"{err.message('en')} (options: trumps, target, ties, maxDeals, ...)") from err
    return TrickSimConfig(kind, options, args.games, args.seed, args.policy)


def run_command(kind: GameKind, args: argparse.Namespace) -> int:
    out: TextIO = sys.stdout
    err: TextIO = sys.stderr
    try:
        config = parse_config(kind, args)
    except ConfigError as exc:
        print(f"ninety-nine simulate: error: {exc}", file=err)
        return 2
    progress = ProgressBar(config.matches, err)
    started = time.perf_counter()
    try:
        summary = run_simulation(config, progress.update)
    finally:
        progress.close()
    elapsed = time.perf_counter() - started
    timing = (
        f"timing: {config.matches} matches in {elapsed:.2f} s = {config.matches / elapsed:,.1f} matches/s"
    )
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False), file=out)
        print(timing, file=err)
    else:
        print(format_summary(summary), file=out)
        print(timing, file=out)
    return 0
