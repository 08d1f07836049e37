"""Options (§2), decks (§3), setup (§4) and the seeded RNG with its commitment (§8.4).

The deal is re-run here with an independent PCG32 written from the algorithm as the rules
module documents it, the way another team would verify a revealed seed.
"""

from __future__ import annotations

import hashlib

import pytest

from ninetynine.engine.rules import (
    Options,
    Reason,
    Rng,
    RuleError,
    apply,
    build_deck,
    legal_choices,
    seed_commitment,
    seed_rng,
    setup,
    validate_state,
)
from ninetynine.engine.rules.options import CHOICES

from .builders import make_state, play

PLAYERS = [f"p{i}" for i in range(1, 11)]


# -- options -------------------------------------------------------------------------------


def test_option_defaults_are_the_spec_table() -> None:
    """§2 기본값. The defaults of the §2 table, under the spec's keys."""
    assert Options().to_mapping() == {
        "mode": "kr-product",
        "handSize": "auto",
        "startTotal": "auto",
        "refill": "on",
        "lives": "auto",
        "onTheBoard": "off",
        "afterElimination": "continue",
        "floorAtZero": "forbid",
        "specialCounts": 4,
        "jokerRange": "60-99",
        "aceHigh": 11,
        "deckCount": "auto",
        "turnSeconds": 15,
    }


def test_auto_options_resolve_by_mode_and_player_count() -> None:
    """auto: handSize kr 5 / classic 3, lives kr 0 / classic 3, deckCount 2 at 7+ (classic)."""
    kr, classic = Options(), Options(mode="classic")
    assert (kr.resolved_hand_size(), classic.resolved_hand_size()) == (5, 3)
    assert (kr.resolved_lives(), classic.resolved_lives()) == (0, 3)
    assert [classic.resolved_deck_count(n) for n in range(2, 11)] == [1] * 5 + [2] * 4
    assert {kr.resolved_deck_count(n) for n in range(2, 11)} == {1}
    assert Options(mode="classic", deck_count=2).resolved_deck_count(3) == 2
    assert Options(mode="classic", deck_count=1).resolved_deck_count(9) == 1
    assert [kr.start_total_for(n) for n in range(2, 11)] == [40, 20] + [0] * 7
    assert Options(lives=5).resolved_lives() == 5 and Options(mode="classic", lives=0).resolved_lives() == 0
    assert kr.joker_bounds() == (60, 99) and Options(joker_range="0-99").joker_bounds() == (0, 99)

    state, events = setup(PLAYERS[:3], Options(mode="classic"), seed=4)
    assert set(state.lives.values()) == {3} and state.start_lives == 3
    assert events[0].data["lives"] == 3 and events[0].data["handSize"] == 3


def test_every_listed_option_value_is_accepted_and_round_trips() -> None:
    """Every choice of every §2 option is accepted, also as the string a client sends."""
    for attr, (key, allowed) in CHOICES.items():
        for value in allowed:
            opts = Options(**{attr: value})  # type: ignore[arg-type]
            text = ("on" if value else "off") if isinstance(value, bool) else str(value)
            assert Options.from_mapping({key: text}) == opts
            assert Options.from_mapping(opts.to_mapping()) == opts


@pytest.mark.parametrize(
    ("raw", "option"),
    [
        ({"handSize": "6"}, "handSize"),
        ({"handSize": "2"}, "handSize"),
        ({"lives": "4"}, "lives"),
        ({"mode": "poker"}, "mode"),
        ({"refill": "maybe"}, "refill"),
        ({"specialCounts": "7"}, "specialCounts"),
        ({"jokerRange": "50-99"}, "jokerRange"),
        ({"aceHigh": "1"}, "aceHigh"),
        ({"deckCount": "3"}, "deckCount"),
        ({"turnSeconds": "5"}, "turnSeconds"),
        ({"floorAtZero": "wrap"}, "floorAtZero"),
        ({"afterElimination": "restart"}, "afterElimination"),
        ({"startTotal": "40"}, "startTotal"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_invalid_option_is_refused(raw: dict[str, str], option: str) -> None:
    """INVALID_OPTION: an unknown key or a value outside the §2 choices, named in the message."""
    with pytest.raises(RuleError) as info:
        Options.from_mapping(raw)
    assert info.value.reason is Reason.INVALID_OPTION
    value = next(iter(raw.values()))
    assert info.value.message() == f"옵션 {option} 값 '{value}'은(는) 쓸 수 없어요"
    assert option in info.value.message("en")


def test_option_types_are_strict() -> None:
    """True is not the hand size 1 and 1 is not 'on': a typed value must be the listed one."""
    for bad in ({"refill": 1}, {"hand_size": True}, {"hand_size": "5"}, {"special_counts": 4.0}):
        with pytest.raises(RuleError) as info:
            Options(**bad)  # type: ignore[arg-type]
        assert info.value.reason is Reason.INVALID_OPTION


@pytest.mark.parametrize("count", [0, 1, 11, 12])
def test_player_count_outside_2_to_10_is_refused(count: int) -> None:
    """INVALID_PLAYER_COUNT: 인원은 2~10명."""
    with pytest.raises(RuleError) as info:
        setup([f"p{i}" for i in range(count)], Options(), seed=1)
    assert info.value.reason is Reason.INVALID_PLAYER_COUNT
    assert info.value.message() == f"인원은 2명부터 10명까지예요 (지금 {count}명)"


@pytest.mark.parametrize("ids", [["a", "a"], ["a", ""], ["a", "x" * 65], ["a", "b\n"]])
def test_bad_player_ids_are_refused(ids: list[str]) -> None:
    with pytest.raises(RuleError) as info:
        setup(ids, Options(), seed=1)
    assert info.value.reason is Reason.INVALID_PLAYER_ID


# -- decks ---------------------------------------------------------------------------------


def test_deck_sizes_for_every_special_count_and_deck_count() -> None:
    """91 (default) / 85 (specialCounts=2) / 52 / 104; specialCounts 2..6 -> 85..97."""
    for k in (2, 3, 4, 5, 6):
        assert len(build_deck("kr-product", k, 1)) == 91 + 3 * (k - 4)
    assert len(build_deck("classic", 4, 1)) == 52
    two = build_deck("classic", 4, 2)
    assert len(two) == 104 and len({c.id for c in two}) == 104
    assert sorted(c.face for c in two[:52]) == sorted(c.face for c in two[52:])


@pytest.mark.parametrize("ace_high", [10, 11])
def test_ace_high_option(ace_high: int) -> None:
    """aceHigh 10 (나무위키) / 11 (Bicycle): the ace counts 1 or aceHigh, nothing else."""
    s = make_state(mode="classic", total=80, hands={"A": ["A", "2"], "B": ["9"]}, ace_high=ace_high)
    results = sorted(c.result for c in legal_choices(s, "A") if c.action.ace_value is not None)
    assert results == [81, 80 + ace_high]
    other = 21 - ace_high  # 11 when aceHigh is 10, 10 when it is 11
    with pytest.raises(RuleError) as info:
        apply(s, "A", play(s, "A", "A", ace_value=other))
    assert info.value.reason is Reason.ACE_VALUE_INVALID


# -- setup and RNG -------------------------------------------------------------------------


def test_pcg32_reference_vector() -> None:
    """pcg32 seed 42, stream 54 -> 0xa15c02b7, 0x7b47f409, 0xba1d3330 (pcg32-demo)."""
    rng = Rng(seed_rng(42, 54))
    assert [rng.next32() for _ in range(3)] == [0xA15C02B7, 0x7B47F409, 0xBA1D3330]


def test_bounded_draws_stay_in_range_and_cover_it() -> None:
    rng = Rng(seed_rng(7))
    draws = [rng.below(6) for _ in range(600)]
    assert set(draws) == set(range(6))
    with pytest.raises(ValueError):
        rng.below(0)


def test_seed_commitment_is_sha256_of_the_seed() -> None:
    """Provably fair: the commitment is SHA-256 of the seed as 8 big-endian bytes."""
    seed = 0x0123456789ABCDEF
    expected = hashlib.sha256(bytes.fromhex("0123456789abcdef")).hexdigest()
    assert seed_commitment(seed) == expected
    state, events = setup(PLAYERS[:4], Options(), seed=seed)
    assert state.seed_commitment == expected == events[0].data["seedCommitment"]
    assert seed_commitment(seed + 1) != expected


class _ReferencePcg32:
    """PCG32 written again from the rules module's documentation, as another team would."""

    def __init__(self, seed: int, stream: int = 54) -> None:
        self.inc = (stream << 1 | 1) % 2**64
        self.state = 0
        self.next()
        self.state = (self.state + seed) % 2**64
        self.next()

    def next(self) -> int:
        old = self.state
        self.state = (old * 6364136223846793005 + self.inc) % 2**64
        x = (((old >> 18) ^ old) >> 27) % 2**32
        rot = old >> 59
        return ((x >> rot) | (x << ((32 - rot) % 32))) % 2**32

    def below(self, n: int) -> int:
        threshold = (2**32 - n) % n
        while True:
            r = self.next()
            if r >= threshold:
                return r % n


@pytest.mark.parametrize(
    ("players", "options"),
    [(4, Options()), (3, Options(mode="classic")), (8, Options(mode="classic")), (2, Options(hand_size=3))],
)
def test_a_revealed_seed_reproduces_the_deal(players: int, options: Options) -> None:
    """Anyone holding the revealed seed can re-run the shuffle and check the deal (§8.4)."""
    seed = 0xDEADBEEF12345
    state, _ = setup(PLAYERS[:players], options, seed=seed)

    ref = _ReferencePcg32(seed)
    pile = [c.id for c in build_deck(options.mode, options.special_counts, state.deck_count)]
    for i in range(len(pile) - 1, 0, -1):
        j = ref.below(i + 1)
        pile[i], pile[j] = pile[j], pile[i]
    first = ref.below(players)
    seats = PLAYERS[:players]
    order = seats[first:] + seats[:first]
    hands: dict[str, list[str]] = {p: [] for p in seats}
    for _ in range(options.resolved_hand_size()):
        for p in order:
            hands[p].append(pile.pop())

    assert state.current == seats[first]
    assert state.hands == hands
    assert state.draw_pile == pile
    assert state.rng.state == ref.state and state.rng.inc == ref.inc


def test_setup_state_is_valid_and_everyone_alive() -> None:
    for n in range(2, 11):
        for options in (Options(), Options(mode="classic"), Options(lives=2, on_the_board=True)):
            state, events = setup(PLAYERS[:n], options, seed=n)
            validate_state(state)
            assert state.round == 1 and state.seq == 0 and state.direction == 1
            assert all(state.alive.values()) and state.elimination_order == []
            types = [e.type for e in events]
            assert types[0] == "gameStarted" and types.count("handDealt") == n
            assert types[-2:] == ["roundStarted", "turnStarted"]
