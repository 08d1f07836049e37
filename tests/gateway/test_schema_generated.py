"""The JSON Schema is what the descriptors give, every definition of it.

``scripts/gen_schema.py`` builds the whole file from ``ClientMessage``, ``ServerMessage`` and the
``.proto`` options; these tests fail when the committed schema drifts from the descriptors (a
field, bound, rule or enum value changed in a ``.proto`` without regenerating), and show the
definitions really come from the descriptors.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from ninetynine.common.codec import enum_json
from ninetynine.common.v1 import json_options_pb2 as jo
from ninetynine.engine.v1 import events_pb2, game_pb2
from ninetynine.gateway.protocol import SCHEMA_PATH
from ninetynine.gateway.v1 import gateway_service_pb2 as gw

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_schema", ROOT / "scripts" / "gen_schema.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_schema_is_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, "scripts/gen_schema.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_every_definition_is_rebuilt_from_the_descriptors() -> None:
    committed: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    generated = json.loads(_generator().render())
    assert generated == committed


def test_a_server_field_option_changes_its_definition() -> None:
    field = events_pb2.Eliminated.DESCRIPTOR.fields_by_name["remaining"]
    bounds = field.GetOptions().Extensions[jo.json].bounds
    defs = _generator().generated()["$defs"]
    assert defs["ev_eliminated"]["properties"]["remaining"] == {
        "type": "integer",
        "minimum": bounds.minimum,
        "maximum": bounds.maximum,
    }
    assert "remaining" in defs["ev_eliminated"]["required"]


def test_every_client_type_and_enum_name_comes_from_the_descriptors() -> None:
    defs = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))["$defs"]
    types = [ref["$ref"].rsplit("/", 1)[1] for ref in defs["ClientMessage"]["oneOf"]]
    assert len(types) == len(gw.ClientMessage.DESCRIPTOR.oneofs_by_name["kind"].fields)
    assert defs["Mode"]["enum"] == ["kr-product", "classic"]
    assert defs["Direction"]["enum"] == [1, -1]
    assert defs["Action"]["properties"]["sign"]["enum"] == [
        enum_json(game_pb2.Sign.DESCRIPTOR)[n] for n in (game_pb2.SIGN_PLUS, game_pb2.SIGN_MINUS)
    ]
    assert set(defs["FullOptions"]["required"]) == set(defs["OptionValues"]["properties"])
