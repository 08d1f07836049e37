"""Every real server frame of the golden corpus is valid under the generated JSON Schema.

``tests/gateway/golden/`` records every server message the gateway writes over whole games and
lobbies, as the exact frame bytes. If the schema refused one, a client validating what it
receives would refuse the real server. Two things in the corpus are encoder inputs no server
sends, and are put right before validating (the encoder's handling of them is what
``test_golden`` pins):

* the reply id: every message is recorded with each of a cycle of ids, up to and beyond 64 bits,
  pushed kinds included. The gateway echoes only the id of a client frame that passed the schema,
  and only in direct replies: the frames are checked without it, and each recorded id a client
  may send is checked once per reply kind;
* the joined token: the recorder's placeholders ("t2") are shorter than the 43 characters of
  ``secrets.token_urlsafe(32)`` the session issues, so a token of that shape stands in.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from ninetynine.common.v1 import json_options_pb2 as jo
from ninetynine.gateway.protocol import SCHEMA_PATH
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from tests.gateway.golden.test_golden import corpus

SCHEMA: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
ISSUED_TOKEN = "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5"[:43]
PUSHED = {
    f.name
    for f in gw.ServerMessage.DESCRIPTOR.oneofs_by_name["kind"].fields
    if f.GetOptions().Extensions[jo.json].pushed
}


def _validator(ref: str) -> Draft202012Validator:
    return Draft202012Validator({**SCHEMA, "oneOf": [{"$ref": f"#/$defs/{ref}"}]})


@cache
def _frames() -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]:
    """The distinct frames without their id, and one frame per (kind, recorded id)."""
    frames: dict[str, dict[str, Any]] = {}
    with_ids: dict[tuple[str, str], dict[str, Any]] = {}
    for record in corpus()[0]:
        frame = json.loads(record["frame"])
        if frame["type"] == "joined":
            frame["token"] = ISSUED_TOKEN
        if "id" in frame:
            with_ids.setdefault((frame["type"], json.dumps(frame["id"])), dict(frame))
            del frame["id"]
        frames.setdefault(json.dumps(frame, sort_keys=True), frame)
    return frames, with_ids


def test_every_recorded_server_frame_validates() -> None:
    frames, _ = _frames()
    server_types = [b["$ref"].rsplit("/", 1)[1] for b in SCHEMA["$defs"]["ServerMessage"]["oneOf"]]
    # One validator per kind: the ServerMessage oneOf would try every kind's branch on each frame.
    validators = {kind: _validator(kind) for kind in server_types}
    refused = [
        (json.dumps(frame)[:200], [e.message[:200] for e in validators[frame["type"]].iter_errors(frame)][:2])
        for frame in frames.values()
        if not validators[frame["type"]].is_valid(frame)
    ]
    assert refused == [], f"{len(refused)} recorded frames refused; first: {refused[0]}"
    assert {f["type"] for f in frames.values()} == set(server_types), "the corpus lacks a server kind"
    assert len(frames) > 10_000


def test_reply_ids_a_client_may_send_validate_and_pushed_kinds_carry_none() -> None:
    _, with_ids = _frames()
    request_id = _validator("RequestId")
    server = _validator("ServerMessage")
    checked = 0
    for (kind, _), frame in with_ids.items():
        if not request_id.is_valid(frame["id"]):
            continue  # beyond what a client frame may carry, so never echoed
        if kind in PUSHED:
            assert not server.is_valid(frame), f"a pushed {kind} with an id was accepted"
        else:
            assert server.is_valid(frame), frame
            checked += 1
    assert checked > 20


def _one(kind: str, test: Any) -> dict[str, Any]:
    frames, _ = _frames()
    found: dict[str, Any] = json.loads(
        json.dumps(next(f for f in frames.values() if f["type"] == kind and test(f)))
    )
    return found


def test_the_generated_rules_refuse_a_frame_that_breaks_them() -> None:
    server = _validator("ServerMessage")
    seated = _one("view", lambda f: f["view"]["viewer"] is not None and f["view"]["phase"] == "playing")
    watching = _one("view", lambda f: f["view"]["viewer"] is None and f["view"]["phase"] == "playing")
    finished = _one("view", lambda f: f["view"]["phase"] == "finished")
    spectator = _one("joined", lambda f: f["role"] == "spectator")
    player = _one("joined", lambda f: f["role"] == "player")
    drawn = _one("event", lambda f: f["event"]["type"] == "cardDrawn")
    for frame in (seated, watching, finished, spectator, player, drawn):
        assert server.is_valid(frame), frame
    broken = []
    for key in ("hand", "myTurn", "legalPlays"):  # a seated viewer's view has all three
        one = json.loads(json.dumps(seated))
        del one["view"][key]
        broken.append(one)
    one = json.loads(json.dumps(watching))  # a spectator's view has none of them
    one["view"]["myTurn"] = False
    broken.append(one)
    for key in ("seed", "result"):  # a finished view reveals both
        one = json.loads(json.dumps(finished))
        del one["view"][key]
        broken.append(one)
    one = json.loads(json.dumps(watching))  # a playing view reveals neither
    one["view"]["seed"] = "42"
    broken.append(one)
    broken.append({**spectator, "playerId": "p1"})  # a spectator has no player id
    broken.append({**spectator, "host": True})  # nor hosts
    broken.append({**player, "playerId": None})
    broken.append({**drawn, "event": {**drawn["event"], "source": "bot"}})  # source is cardPlayed's only
    accepted = [frame for frame in broken if server.is_valid(frame)]
    assert accepted == []
