"""``ninety-nine simulate``: deterministic summaries, consistent numbers, clear option errors."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from ninetynine.cli import main
from ninetynine.engine.rules import Options
from ninetynine.engine.simulate import (
    ConfigError,
    ProgressBar,
    SimConfig,
    game_seeds,
    parse_options,
    run_simulation,
)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    summary: dict[str, Any] = json.loads(out)
    return summary


def assert_consistent(summary: dict[str, Any]) -> None:
    """The numbers a reader would cross-check: one winner per game, everybody else eliminated."""
    games = summary["games"]
    players = summary["players"]
    assert sum(w["wins"] for w in summary["winsBySeat"].values()) == games
    assert sum(w["wins"] for w in summary["winsByStartOffset"].values()) == games
    assert len(summary["winsBySeat"]) == players
    assert sum(summary["eliminationsByRound"].values()) == games * (players - 1)
    assert sum(summary["eliminationsByReason"].values()) == games * (players - 1)
    assert sum(c["count"] for c in summary["cardsPlayed"].values()) == summary["moves"]["total"]
    assert (
        0
        <= summary["finalTotal"]["min"]
        <= summary["finalTotal"]["mean"]
        <= summary["finalTotal"]["max"]
        <= 99
    )
    moves = summary["moves"]
    assert moves["p50"] <= moves["max"]
    assert moves["mean"] == pytest.approx(moves["total"] / games, abs=1e-4)


def test_same_arguments_give_the_same_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--players", "4", "--games", "60", "--seed", "7", "--option", "lives=2")
    first = run_json(capsys, *args)
    second = run_json(capsys, *args)
    assert first == second
    assert first["games"] == 60 and first["seed"] == 7
    assert_consistent(first)


def test_another_seed_gives_other_games(capsys: pytest.CaptureFixture[str]) -> None:
    a = run_json(capsys, "--games", "40", "--seed", "1")
    b = run_json(capsys, "--games", "40", "--seed", "2")
    assert a["cardsPlayed"] != b["cardsPlayed"] or a["moves"] != b["moves"]


def test_text_output_is_deterministic_apart_from_the_timing_line(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--games", "30", "--seed", "3", "--players", "3")
    code1, out1, _ = run_cli(capsys, *args)
    code2, out2, _ = run_cli(capsys, *args)
    assert code1 == code2 == 0
    lines1, lines2 = out1.splitlines(), out2.splitlines()
    assert lines1[-1].startswith("timing: 30 games in ") and "games/s" in lines1[-1]
    assert lines1[:-1] == lines2[:-1]
    assert "moves per game: mean" in out1
    assert "wins by seat: 1:" in out1


def test_json_keeps_timing_off_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "--games", "5", "--json")
    assert code == 0
    assert "games/s" not in out
    assert "games/s" in err
    json.loads(out)  # stdout is exactly one JSON document


def test_kr_product_default_four_players(capsys: pytest.CaptureFixture[str]) -> None:
    summary = run_json(capsys, "--games", "50", "--seed", "11")
    assert_consistent(summary)
    # kr-product without lives: one round, every loss is an elimination, nobody loses a life.
    assert summary["rounds"] == {"mean": 1.0, "max": 1}
    assert summary["livesLost"]["total"] == 0
    assert set(summary["eliminationsByReason"]) == {"noPlayableCard"}
    assert set(summary["cardsPlayed"]) <= {"add", "plusMinus", "zero", "joker"}
    assert "add" in summary["cardsPlayed"]


def test_classic_mode_uses_lives_and_playing_cards(capsys: pytest.CaptureFixture[str]) -> None:
    summary = run_json(capsys, "--mode", "classic", "--players", "3", "--games", "15", "--seed", "5")
    assert_consistent(summary)
    assert summary["mode"] == "classic"
    assert set(summary["cardsPlayed"]) <= {"add", "ace", "reverse", "hold", "minus", "to99"}
    # classic defaults to 3 lives: each loser loses all 3 before leaving, so at least 2 x 3 per game.
    assert summary["livesLost"]["total"] >= 15 * 2 * 3
    assert summary["rounds"]["max"] > 1
    assert set(summary["choices"]) <= {"ace 1", "ace 11"}


def test_timeout_policy_follows_the_spec_choices(capsys: pytest.CaptureFixture[str]) -> None:
    summary = run_json(capsys, "--policy", "timeout", "--games", "30", "--seed", "9")
    assert_consistent(summary)
    # §8.5: a 0 keeps the direction and a joker takes its range minimum.
    assert "zero reverse" not in summary["choices"]
    assert "joker max" not in summary["choices"]
    assert "joker between" not in summary["choices"]


def test_on_the_board_option_changes_the_games(capsys: pytest.CaptureFixture[str]) -> None:
    summary = run_json(capsys, "--games", "20", "--option", "lives=1", "--option", "onTheBoard=on")
    assert_consistent(summary)
    assert summary["options"]["lives"] == 1
    assert summary["options"]["onTheBoard"] == "on"
    # With one life on the board, every elimination is the second loss.
    assert set(summary["eliminationsByReason"]) == {"lostOnTheBoard"}


def test_run_simulation_counts_every_game() -> None:
    config = SimConfig(Options(mode="classic"), players=7, games=5, seed=123)
    seen: list[int] = []
    summary = run_simulation(config, seen.append)
    assert seen == [1, 2, 3, 4, 5]
    assert_consistent(summary)


def test_game_seeds_are_reproducible_and_distinct() -> None:
    seeds = game_seeds(7, 50)
    assert seeds == game_seeds(7, 50)
    assert len(set(seeds)) == 50
    assert game_seeds(7, 60)[:50] == seeds


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--option", "lives=7"], "Option lives cannot be '7' (choices: auto, 0, 1, 2, 3, 5)"),
        (["--option", "onTheBoard=maybe"], "choices: on, off"),
        (["--option", "colour=red"], "known options:"),
        (["--option", "lives"], "expects key=value"),
        (["--option", "mode=classic"], "--mode"),
        (["--option", "lives=1", "--option", "lives=2"], "given twice"),
        (["--mode", "poker"], "Option mode cannot be 'poker'"),
        (["--players", "1"], "2 to 10 players"),
        (["--players", "11"], "2 to 10 players"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, out, err = run_cli(capsys, "--games", "2", *argv)
    assert code == 2
    assert out == ""
    assert needle in err


@pytest.mark.parametrize(
    "argv", [["--games", "0"], ["--games", "many"], ["--seed", "-1"], ["--policy", "smart"]]
)
def test_malformed_numbers_are_refused_by_the_parser(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["simulate", *argv])
    assert exc.value.code == 2
    assert "simulate: error:" in capsys.readouterr().err


def test_parse_options_reads_spec_keys() -> None:
    options = parse_options("classic", ["aceHigh=10", "deckCount=2", "refill=off"])
    assert options == Options(mode="classic", ace_high=10, deck_count=2, refill=False)
    with pytest.raises(ConfigError, match="seed must be"):
        run_simulation(SimConfig(Options(), players=2, games=1, seed=1 << 64))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_on_a_terminal_and_clears_its_line() -> None:
    terminal = _Terminal()
    bar = ProgressBar(total=4, stream=terminal)
    run_simulation(SimConfig(Options(), players=3, games=4, seed=1), bar.update)
    bar.close()
    text = terminal.getvalue()
    assert "4/4 games" in text  # the last game is always drawn
    assert text.endswith("\r\033[K")


def test_progress_bar_is_silent_when_not_a_terminal() -> None:
    pipe = io.StringIO()
    bar = ProgressBar(total=2, stream=pipe)
    bar.update(1)
    bar.update(2)
    bar.close()
    assert pipe.getvalue() == ""
