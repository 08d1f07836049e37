"""The client-frame definitions of the JSON Schema are what the descriptors give.

``scripts/gen_schema.py`` builds them from ``ClientMessage`` and the ``.proto`` options; these tests
fail when the committed schema drifts from the descriptors (a field, bound or enum value changed
in a ``.proto`` without regenerating), and show the definitions really come from the descriptors.
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
from ninetynine.engine.v1 import game_pb2
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


def test_a_spoiled_client_definition_is_rebuilt_from_the_descriptors() -> None:
    committed: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    spoiled = json.loads(json.dumps(committed))
    spoiled["$defs"]["play"] = {"type": "object"}
    spoiled["$defs"]["Action"]["properties"]["sign"] = {"enum": ["plus"]}
    del spoiled["$defs"]["joinRoom"]
    assert json.loads(_generator().render(spoiled)) == committed


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
