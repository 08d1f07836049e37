"""``ninety-nine rules list`` and ``ninety-nine simulate --rules``: every preset listed and playable."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ninetynine.cli import main
from ninetynine.engine.rules import PRESETS, Options
from ninetynine.engine.rules.presets import preset_names, rules_for


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _rules(name: str) -> Any:
    return PRESETS[name] if name in PRESETS else rules_for(Options(mode=name))


def test_rules_list_prints_every_preset_with_its_line_and_source(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "rules", "list")
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == [*preset_names(), "trick"]
    assert "[004 part I]" in lines[-1] and "3-3" in lines[-1]
    for name, line in zip(preset_names(), lines[:-1], strict=True):
        rules = _rules(name)
        assert rules.summary in line and f"[{rules.source}]" in line
    _, english, _ = _run(capsys, "rules", "list", "--lang", "en")
    assert PRESETS["na-online"].summary_en in english


def test_rules_list_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "rules", "list", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["name"] for r in rows] == [*preset_names(), "trick"]
    assert {r["game"] for r in rows[:-1]} == {"adding"} and rows[-1]["game"] == "trick"
    ru = next(r for r in rows if r["name"] == "ru-99")
    rules = PRESETS["ru-99"]
    assert ru == {
        "name": "ru-99",
        "game": "adding",
        "summary": rules.summary,
        "summaryEn": rules.summary_en,
        "source": "004 part II",
        "players": {"min": 2, "max": 5},
    }


@pytest.mark.parametrize("name", preset_names())
def test_simulate_plays_every_preset(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, out, err = _run(capsys, "simulate", "--rules", name, "--games", "3", "--players", "3", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["games"] == 3
    assert sum(w["wins"] for w in summary["winsBySeat"].values()) == 3
    if name in PRESETS:
        assert summary["rules"] == name and summary["options"] == {}
        assert set(summary["effects"]) == {
            "turnSkipped",
            "playAgain",
            "tokensPaid",
            "obligationPassed",
            "secondCardOwed",
            "cardsDiscarded",
        }
    else:
        assert "rules" not in summary and summary["mode"] == name


def test_simulate_rules_of_a_spec_mode_is_that_mode(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--games", "5", "--seed", "3", "--json", "--option", "lives=2")
    _, by_rules, _ = _run(capsys, "simulate", "--rules", "classic", *args)
    _, by_mode, _ = _run(capsys, "simulate", "--mode", "classic", *args)
    assert json.loads(by_rules) == json.loads(by_mode)


def test_simulate_house_rules_change_the_games(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("simulate", "--rules", "na-standard", "--games", "5", "--json")
    _, plain, _ = _run(capsys, *args)
    _, house, _ = _run(capsys, *args, "--option", "card.K=add", "--option", "tokens=2")
    plain_summary, house_summary = json.loads(plain), json.loads(house)
    assert "to99" in plain_summary["cardsPlayed"]
    assert "to99" not in house_summary["cardsPlayed"]  # the King now adds 10
    assert house_summary["options"] == {"card.K": "add", "tokens": "2"}
    assert house_summary["livesLost"]["meanPerGame"] < plain_summary["livesLost"]["meanPerGame"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--rules", "poker"], "unknown rules 'poker'"),
        (["--rules", "na-standard", "--option", "card.K=fly"], "House rule card.K cannot be 'fly'"),
        (["--rules", "na-standard", "--option", "colour=red"], "house rules: tokens, handSize"),
        (["--rules", "na-standard", "--option", "tokens"], "expects key=value"),
        (["--rules", "ru-99", "--players", "6"], "ru-99 seats 2 to 5 players (got 6)"),
    ],
)
def test_simulate_bad_rules_exit_2_with_a_clear_message(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, out, err = _run(capsys, "simulate", "--games", "2", *argv)
    assert code == 2 and out == ""
    assert needle in err


def test_simulate_plays_the_trick_game(capsys: pytest.CaptureFixture[str]) -> None:
    """Its own summary: deals per match, contracts made, declarer success, wins by seat."""
    args = ("simulate", "--rules", "trick", "--games", "20", "--seed", "4", "--json")
    code, out, err = _run(capsys, *args, "--option", "trumps=byContracts")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["game"] == "trick" and summary["matches"] == 20
    assert summary["options"]["trumps"] == "byContracts"
    deals = summary["dealsPerMatch"]
    assert sum(summary["contractsMade"]["perDeal"].values()) == deals["total"] >= 20
    assert summary["declarer"]["deals"] + summary["declarer"]["noDeclarer"] == deals["total"]
    assert sum(w["wins"] for w in summary["winsBySeat"].values()) >= 20
    assert json.loads(_run(capsys, *args, "--option", "trumps=byContracts")[1]) == summary  # deterministic
    _, text, _ = _run(capsys, "simulate", "--rules", "trick", "--games", "3")
    assert "contracts made:" in text and "declarer success:" in text and "deals per match:" in text


def test_simulate_bot_against_random_players_wins_most_trick_matches(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(
        capsys, "simulate", "--rules", "trick", "--games", "30", "--policy", "bot-vs-random", "--json"
    )
    assert code == 0
    assert json.loads(out)["winsBySeat"]["0"]["rate"] > 0.6


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--rules", "trick", "--players", "4"], "exactly 3 players"),
        (["--rules", "trick", "--option", "target=77"], "target"),
        (["--policy", "bot"], "for the trick game"),
    ],
)
def test_simulate_bad_trick_arguments_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, out, err = _run(capsys, "simulate", "--games", "2", *argv)
    assert code == 2 and out == ""
    assert needle in err
