"""The gateway's fast validation tier never changes a verdict: every client frame gets the refusal
(reason and detail) or the message that the reference ``jsonschema`` validator alone would give.

Frames are the documented client examples, mutated by hypothesis: fields replaced by any JSON value
(booleans where numbers go, floats, huge integers, long or odd strings, nested values), fields
removed, unknown fields added.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ninetynine.engine.rules import RuleError
from ninetynine.gateway import protocol
from ninetynine.gateway.convert import CLIENT_TYPES, client_from_json
from ninetynine.gateway.protocol import ProtocolError, parse_text
from tests.gateway.doc_examples import doc_examples

EXAMPLES: list[dict[str, Any]] = doc_examples()["client"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([0, 1, 2, 3, 10, 11, 99, 100, 2**53 - 1, 2**53]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1.0, 10.0, 2.5, -0.0]),
    st.text(max_size=80),
    st.sampled_from(["", "ko", "en", "auto", "N5-3", "AS-1", "keep", "reverse", "+", "x" * 65]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


@st.composite
def mutated_messages(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = copy.deepcopy(draw(st.sampled_from(EXAMPLES)))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        paths = _paths(message)
        action = draw(st.sampled_from(["replace", "remove", "add"]))
        path: tuple[Any, ...] = draw(st.sampled_from(paths)) if paths else ()
        if not path or path == ("type",):
            action = "add"
        parent: Any = message
        for step in path[:-1]:
            parent = parent[step]
        if action == "replace":
            parent[path[-1]] = draw(json_values)
        elif action == "remove":
            del parent[path[-1]]
        else:
            target = parent[path[-1]] if path else message
            if isinstance(target, dict):
                target[draw(st.sampled_from(["extra", "id", "lang", "options", "sign", "seats"]))] = draw(
                    json_values
                )
    return message


def _reference_outcome(raw: dict[str, Any]) -> tuple[str, str] | str:
    """What parse_text answered before the fast tier: jsonschema's best match, or the message."""
    error = jsonschema.exceptions.best_match(protocol.message_validator(raw["type"]).iter_errors(raw))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(message)"
        return ("MALFORMED_MESSAGE", protocol.short_detail(f"{where}: {error.message}"))
    try:
        return str(client_from_json(raw))
    except RuleError as exc:
        return ("refused", exc.reason.value)


def _outcome(raw: dict[str, Any]) -> tuple[str, str] | str:
    try:
        message, _ = parse_text(json.dumps(raw))
    except ProtocolError as err:
        if err.reason == "MALFORMED_MESSAGE":
            return (err.reason, err.metadata["detail"])
        return ("refused", err.reason)
    return str(message)


def test_every_client_type_has_a_fast_validator() -> None:
    # Documented for the hot path: if a schema change moves a type off it, this says so.
    assert {kind for kind in CLIENT_TYPES if protocol._fast_validator(kind) is None} == set()


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: str(m["type"]))
def test_documented_examples_pass_both_tiers(message: dict[str, Any]) -> None:
    fast = protocol._fast_validator(message["type"])
    assert fast is not None
    fast(copy.deepcopy(message))
    assert _outcome(message) == _reference_outcome(message)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_messages())
@example({"type": "play", "clientSeq": 3, "action": {"cardId": "AS-1", "aceValue": True}})
def test_mutated_frames_get_the_reference_verdict(message: dict[str, Any]) -> None:
    if message.get("type") not in CLIENT_TYPES:
        return  # refused before the schema (UNKNOWN_TYPE / MALFORMED_MESSAGE), unchanged code path
    assert _outcome(message) == _reference_outcome(message)
