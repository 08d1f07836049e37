"""``buf lint`` and ``buf breaking`` (against the previous commit) pass on protos/ (scripts/buf_check.sh)."""

from __future__ import annotations

import subprocess

import pytest

from tests.engine.service_fixtures import ROOT


def test_buf_lint_and_breaking() -> None:
    if not (ROOT / "node_modules" / ".bin" / "buf").exists():
        result = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if result.returncode != 0:
            pytest.skip(
                f"buf comes from npm (@bufbuild/buf) and npm ci failed: {result.stderr.strip()[-300:]}"
            )
    result = subprocess.run(
        ["bash", "scripts/buf_check.sh"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "buf lint: ok" in result.stdout
