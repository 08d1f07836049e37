"""The JSON examples of docs/client-protocol.md (its ```json client, server and invalid blocks), parsed.

The document's examples are test data for the schema tests, the fast-validation tests and the
gateway fuzz harness' seeds; they are read here once so every user finds the same blocks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[2] / "docs" / "client-protocol.md"
_BLOCK = re.compile(r"^```json (client|server|invalid)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def doc_examples() -> dict[str, list[dict[str, Any]]]:
    """The parsed examples by block kind ("client", "server", "invalid"), in document order."""
    found: dict[str, list[dict[str, Any]]] = {"client": [], "server": [], "invalid": []}
    for kind, body in _BLOCK.findall(DOC.read_text(encoding="utf-8")):
        found[kind].append(json.loads(body))
    return found
