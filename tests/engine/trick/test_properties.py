"""Whole games played by a random policy from random seeds: conservation, secrecy, determinism, the end."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ninetynine.engine.rules.state import Event
from ninetynine.engine.trick import (
    TrickOptions,
    TrickState,
    apply,
    card,
    deck,
    pending,
    player_view,
    setup,
)

from .builders import SEATS, random_policy

ALL_IDS = {c.id for c in deck()}


def _strings(value: Any) -> set[str]:
    """Every string value anywhere in a JSON-like value."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(_strings(v) for v in value.values())) if value else set()
    if isinstance(value, list | tuple):
        return set().union(*(_strings(v) for v in value)) if value else set()
    return set()


def _secrets_of(s: TrickState, viewer: str | None) -> set[str]:
    """Ids and faces of cards ``viewer`` must not see: others' hands and face-down bids."""
    hidden: set[str] = set()
    for p in SEATS:
        if p == viewer:
            continue
        hidden.update(s.hands[p])
        if not s.revealed[p]:
            hidden.update(s.bids.get(p, ()))
    return hidden | {card(c).face for c in hidden}


def _conserved(s: TrickState) -> None:
    held = [c for p in SEATS for c in (*s.hands[p], *s.bids.get(p, ()), *s.won_cards[p])]
    held += [c for _, c in s.trick]
    assert sorted(held) == sorted(ALL_IDS)


def _no_leak(s: TrickState, events: list[Event]) -> None:
    """No view or event shows ``viewer`` a card of another hand or face-down bid.

    Events of a step that started a new deal are checked from ``dealStarted`` on: those
    before it close the old deal, whose every card was public by then, and its cards are
    in the new hands now.
    """
    starts = [i for i, e in enumerate(events) if e.type == "dealStarted"]
    fresh = events[starts[-1] :] if starts else events
    for viewer in (*SEATS, None):
        secrets = _secrets_of(s, viewer)
        view = player_view(s, viewer)
        assert not (_strings({k: v for k, v in view.items() if k != "deals"}) & secrets), viewer
        seen = [e.to_dict() for e in fresh if e.visible_to(viewer)]
        assert not (_strings(seen) & secrets), viewer
        for pl in view["players"]:
            if pl["id"] != viewer and not s.revealed[pl["id"]]:
                assert pl["bid"] is None
    if not s.finished:
        assert "seed" not in player_view(s, None)


def _play(seed: int, policy_seed: int, options: TrickOptions, check: bool) -> tuple[TrickState, list[Any]]:
    s, events = setup(SEATS, options, seed=seed)
    log: list[Any] = [[e.to_dict() for e in events]]
    policy = random_policy(random.Random(policy_seed), announce_chance=0.1)
    pick = random.Random(policy_seed + 1)
    steps = 0
    while not s.finished:
        if check:
            _conserved(s)
            _no_leak(s, events)
        p = pick.choice(pending(s))
        s, events = apply(s, p, policy(s, p), now_ms=steps)
        log.append([e.to_dict() for e in events])
        steps += 1
        assert steps < options.max_deals * 40
    _conserved(s)
    _no_leak(s, events)
    return s, log


options_st = st.builds(
    TrickOptions,
    trumps=st.sampled_from(["none", "byContracts"]),
    ties=st.sampled_from(["share", "playOn"]),
    max_deals=st.sampled_from([9, 30]),
)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), policy_seed=st.integers(0, 2**32), options=options_st)
def test_random_games_conserve_cards_hide_secrets_and_end(
    seed: int, policy_seed: int, options: TrickOptions
) -> None:
    s, _ = _play(seed, policy_seed, options, check=True)
    assert s.winners and len(s.deals) <= options.max_deals
    assert all(len(d.lines) == 3 and sum(ln.tricks for ln in d.lines) == 9 for d in s.deals)
    assert {p: sum(ln.total for d in s.deals for ln in d.lines if ln.player == p) for p in SEATS} == s.scores


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), policy_seed=st.integers(0, 2**32))
def test_same_seed_and_actions_give_the_same_game(seed: int, policy_seed: int) -> None:
    one, log_one = _play(seed, policy_seed, TrickOptions(), check=False)
    two, log_two = _play(seed, policy_seed, TrickOptions(), check=False)
    assert one == two and log_one == log_two


def test_the_secrecy_check_sees_a_hand_shown_to_the_wrong_player() -> None:
    """The leak check is not vacuous: a's own view holds what b must not see."""
    s, _ = setup(SEATS, seed=1)
    assert len(_strings(player_view(s, "a")) & _secrets_of(s, "b")) == 24  # 12 ids and 12 faces
    assert not _strings(player_view(s, "b")) & _secrets_of(s, "b")
