"""bench.load.floor: the floor server answers each play and fans the move out to every seat of the room."""

from __future__ import annotations

import json

import pytest

from bench.load import floor
from ninetynine.launch import free_port


def test_each_play_is_answered_and_every_seat_gets_the_push_and_its_view(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert floor.main(["--clients", "8", "--rate", "20", "--duration", "1", "--port", str(free_port())]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["moves"] >= 10
    # played to the mover, then the cardPlayed push and a view to each of the room's four seats
    assert result["frames"] == 9 * result["moves"]
