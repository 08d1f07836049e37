"""Runs the Node contract client (tests/contract_node/contract.js) against a real engine.

Needs ``node`` and the pinned npm packages (``npm ci`` at the repo root). When node_modules is
missing the test tries ``npm ci`` itself and is skipped only if that cannot be done here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.service_fixtures import ROOT, RunningEngine, run_engine

SCRIPT = Path(__file__).with_name("contract.js")


def _node_ready() -> str | None:
    """None when node and the packages are usable, else why not."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (ROOT / "node_modules" / "@grpc" / "grpc-js").exists():
        if shutil.which("npm") is None:
            return "node_modules missing and npm is not installed"
        result = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if result.returncode != 0:
            return f"npm ci failed: {result.stderr.strip()[-300:]}"
    return None


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEngine]:
    yield from run_engine(tmp_path_factory.mktemp("engine"))


def test_node_client_plays_a_full_game(engine: RunningEngine) -> None:
    why_not = _node_ready()
    if why_not is not None:
        pytest.skip(f"Node contract test needs node + npm packages: {why_not}")
    result = subprocess.run(
        ["node", str(SCRIPT), engine.target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["ok"] is True and summary["moves"] > 0
    assert summary["winner"] in {"ana", "ben", "cy"}
