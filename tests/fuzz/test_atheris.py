"""Each atheris harness runs a bounded, seeded libFuzzer session without a crash; a planted bug is found.

Every harness runs as ``python -m tests.fuzz <target>`` in its own process (libFuzzer owns the
process and exits it), for a fixed number of runs from a fixed seed, so a failure reproduces
with the same command. The budget keeps all of them together at about 20 s of one core; ``make
fuzz`` runs them for minutes. The planted-bug harness shows a run can fail: without it every run
of the real harnesses passing would prove nothing about the harnesses themselves.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("atheris")

ROOT = Path(__file__).resolve().parents[2]
# Runs per harness, about 4-7 s each here: the gateway (jsonschema words every refusal) and the engine
# (whole games validated per request) do 2-10k runs a second, the session 20-40k.
RUNS = {"gateway": 12_000, "engine": 50_000, "session": 60_000}
PLANTED_RUNS = 500_000  # found within a few thousand; the rest is margin


def fuzz(target: str, *flags: str, artifacts: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.fuzz", target, *flags, "-seed=7", f"-artifact_prefix={artifacts}/"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # libFuzzer's report and atheris' Python traceback, in order
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.parametrize("target", sorted(RUNS))
def test_a_bounded_run_finds_no_crash(target: str, tmp_path: Path) -> None:
    runs = RUNS[target]
    done = fuzz(target, f"-runs={runs}", artifacts=tmp_path)
    log = done.stdout
    assert done.returncode == 0, log[-4000:]
    assert f"Done {runs} runs" in log, log[-2000:]
    assert re.search(r"INITED cov: \d+ ft: \d+", log), "the seeds ran with coverage"
    assert list(tmp_path.iterdir()) == [], "no crash input was written"


def test_a_planted_bug_is_found_and_its_input_written(tmp_path: Path) -> None:
    done = fuzz("planted", f"-runs={PLANTED_RUNS}", artifacts=tmp_path)
    log = done.stdout
    assert done.returncode != 0, log[-2000:]
    assert "IndexError" in log and f"Done {PLANTED_RUNS} runs" not in log
    crashes = list(tmp_path.glob("crash-*"))
    assert len(crashes) == 1 and crashes[0].read_bytes().startswith(b"99!")
    replay = fuzz("planted", str(crashes[0]), artifacts=tmp_path / "replay")
    assert replay.returncode != 0 and "IndexError" in replay.stdout, "the written input reproduces it"
