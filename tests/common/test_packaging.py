"""The supply chain: declared floors that the generated code can import with, a pinned generator,
locks that match pyproject.toml, and a runtime lock without the test and dev tools."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "ninetynine"
# grpcio's helper packages are released with it in step: they share its floor
GRPC_FAMILY = ("grpcio", "grpcio-health-checking", "grpcio-reflection", "grpcio-status")
PROTOBUF_GENCODE = re.compile(
    r"ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.\w+,\s*(\d+),\s*(\d+),\s*(\d+),"
)
GRPC_GENCODE = re.compile(r"^GRPC_GENERATED_VERSION = '([^']+)'", re.MULTILINE)


def _project() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        project: dict[str, Any] = tomllib.load(f)["project"]
    return project


def _runtime() -> dict[str, Requirement]:
    return {str(canonicalize_name(r.name)): r for r in map(Requirement, _project()["dependencies"])}


def _floor(req: Requirement) -> Version:
    floors = [Version(s.version) for s in req.specifier if s.operator in (">=", "==", "~=")]
    assert floors, f"{req} declares no floor"
    return max(floors)


def _generated(pattern: re.Pattern[str], glob: str) -> set[Version]:
    found = {
        Version(".".join(m.groups())) for path in GEN.rglob(glob) for m in pattern.finditer(path.read_text())
    }
    assert found, f"no {pattern.pattern!r} in ninetynine/**/{glob}"
    return found


def test_declared_floors_install_versions_the_generated_code_imports_with() -> None:
    # the generated code refuses at import a grpc older than GRPC_GENERATED_VERSION and a protobuf
    # older than its gencode
    runtime = _runtime()
    grpc_needed = max(_generated(GRPC_GENCODE, "*_pb2_grpc.py"))
    protobuf_needed = max(_generated(PROTOBUF_GENCODE, "*_pb2.py"))
    too_low = {name: str(runtime[name]) for name in GRPC_FAMILY if _floor(runtime[name]) < grpc_needed}
    assert not too_low, f"the generated code needs grpc >= {grpc_needed}"
    assert _floor(runtime["protobuf"]) >= protobuf_needed, (
        f"the generated code needs protobuf >= {protobuf_needed}"
    )


def test_the_generator_is_pinned_to_the_release_that_wrote_gen() -> None:
    protos = _project()["optional-dependencies"]["protos"]
    pins = {str(canonicalize_name(r.name)): r for r in map(Requirement, protos)}
    assert set(pins) == {"grpcio-tools", "mypy-protobuf"}
    for req in pins.values():
        assert [s.operator for s in req.specifier] == ["=="], f"{req} is not an exact pin"
    # grpcio-tools stamps its own version into every *_pb2_grpc.py
    assert _generated(GRPC_GENCODE, "*_pb2_grpc.py") == {_floor(pins["grpcio-tools"])}


def test_the_locks_match_pyproject() -> None:
    result = subprocess.run(
        [sys.executable, "scripts/lock.py", "--check"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_runtime_lock_holds_no_test_or_dev_tool() -> None:
    locked = {
        canonicalize_name(m.group(1))
        for m in re.finditer(
            r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", (ROOT / "requirements/run.lock").read_text(), re.M
        )
    }
    tools = (
        {
            canonicalize_name(Requirement(text).name)
            for extra in _project()["optional-dependencies"].values()
            for text in extra
        }
        - set(_runtime())
        - {canonicalize_name(_project()["name"])}
    )
    assert {"pytest", "playwright", "mypy", "grpcio-tools"} <= tools
    assert not locked & tools, f"make run would install {sorted(locked & tools)}"


def test_the_image_installs_the_runtime_lock_and_resolves_nothing_else() -> None:
    text = (ROOT / "deploy/Dockerfile").read_text().replace("\\\n", " ")
    commands = [
        c.strip() for line in text.splitlines() if line.startswith("RUN ") for c in line[4:].split("&&")
    ]
    pip = [c for c in commands if re.search(r"\bpip (install|wheel)\b", c)]
    assert "/opt/venv/bin/pip install --require-hashes -r requirements/run.lock" in pip
    assert all("--no-deps" in c for c in pip if "requirements/run.lock" not in c), pip
