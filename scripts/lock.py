#!/usr/bin/env python3
"""Resolve the hashed lock files in ``requirements/`` from pyproject.toml with the pinned uv.

Three locks, all universal (one file for every platform; the Linux-x86_64-only test tools keep their
markers) and with the sha256 of every file pip may install:

- ``run.lock``: the runtime dependencies and the build backend: what ``make run`` installs.
- ``dev.lock``: run.lock's pins plus the test, protos and dev extras: ``make test``/``lint``/... and CI.
- ``lowest.lock``: every direct requirement of the runtime, test and build lists at its declared floor
  (``--resolution lowest-direct``): what scripts/test_lowest.sh tests, so a floor is a version we run.

    python scripts/lock.py            # re-resolve after a pyproject change, keeping every pin it can
    python scripts/lock.py --upgrade  # move every pin to the newest release pyproject allows
    python scripts/lock.py --check    # offline: the locks are what pyproject.toml asks for (CI)
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
LOCK_DIR = ROOT / "requirements"
RUN_LOCK = LOCK_DIR / "run.lock"
DEV_LOCK = LOCK_DIR / "dev.lock"
LOWEST_LOCK = LOCK_DIR / "lowest.lock"
# The platform CI and the images run on: every lock must install there from wheels alone.
CI_PLATFORM = "x86_64-manylinux_2_28"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


@dataclass(frozen=True)
class Lock:
    path: Path
    extras: tuple[str, ...]
    lowest: bool = False


LOCKS = (
    Lock(DEV_LOCK, ("test", "dev")),
    Lock(RUN_LOCK, ()),
    Lock(LOWEST_LOCK, ("test",), lowest=True),
)


def _pyproject() -> dict[str, object]:
    with PYPROJECT.open("rb") as f:
        return tomllib.load(f)


def _project_name() -> str:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    return canonicalize_name(project["name"])


def requirements(extras: tuple[str, ...]) -> list[Requirement]:
    """pyproject's runtime and build-system requirements plus those of ``extras`` (self-references
    such as ``ninety-nine[protos]`` expanded)."""
    data = _pyproject()
    project = data["project"]
    build = data["build-system"]
    assert isinstance(project, dict) and isinstance(build, dict)
    optional: dict[str, list[str]] = project.get("optional-dependencies", {})
    found = [Requirement(r) for r in [*project["dependencies"], *build["requires"]]]
    pending, seen = list(extras), set[str]()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in optional[extra]:
            req = Requirement(text)
            if canonicalize_name(req.name) == _project_name():
                pending.extend(req.extras)
            else:
                found.append(req)
    return found


def pins(lock: Path) -> dict[str, dict[Version, int]]:
    """``name -> {version: number of hashes}`` of a lock file (a package may be locked at one version
    per marker, e.g. one for CPython 3.11 and another for 3.12+)."""
    result: dict[str, dict[Version, int]] = {}
    current: tuple[str, Version] | None = None
    for line in lock.read_text().splitlines():
        match = PIN.match(line)
        if match:
            current = (canonicalize_name(match.group(1)), Version(match.group(2)))
            result.setdefault(current[0], {})[current[1]] = 0
        elif line.strip().startswith("--hash=sha256:") and current:
            result[current[0]][current[1]] += 1
    return result


def _uv() -> str:
    """The uv next to this interpreter, at the version pyproject's dev extra pins."""
    wanted = next(
        str(r.specifier).removeprefix("==")
        for r in requirements(("dev",))
        if canonicalize_name(r.name) == "uv"
    )
    candidate = Path(sys.executable).parent / "uv"
    found = str(candidate) if candidate.exists() else shutil.which("uv")
    version = ""
    if found:
        out = subprocess.run([found, "--version"], capture_output=True, text=True, check=False).stdout
        version = out.split()[1] if len(out.split()) > 1 else out
    if version != wanted:
        raise SystemExit(
            f"scripts/lock.py needs uv {wanted} (found {version or 'none'}): `make venv` installs it "
            f"from requirements/dev.lock, or `pip install uv=={wanted}`"
        )
    assert found
    return found


def _oldest_python() -> str:
    """The oldest Python requires-python allows (">=3.11" -> "3.11")."""
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    return str(project["requires-python"]).removeprefix(">=")


def resolve(lock: Lock, upgrade: bool) -> None:
    uv = _uv()
    build = _pyproject()["build-system"]
    assert isinstance(build, dict)
    python = ["--python-version", _oldest_python()]
    args = [uv, "pip", "compile", "pyproject.toml", "-", "--universal", "--generate-hashes", *python]
    args += ["--custom-compile-command", "make lock", "--quiet"]
    args += [f"--extra={extra}" for extra in lock.extras]
    if lock.path == RUN_LOCK:
        args += ["--constraint", str(DEV_LOCK.relative_to(ROOT))]  # the same pins as dev.lock
    if lock.lowest:
        args += ["--resolution", "lowest-direct"]
    if upgrade:
        args.append("--upgrade")
    args += ["--output-file", str(lock.path.relative_to(ROOT))]
    # The build backend comes in on stdin: pip installs the project with --no-build-isolation.
    stdin = "".join(f"{r}\n" for r in build["requires"])
    subprocess.run(args, input=stdin, text=True, cwd=ROOT, check=True)
    # A universal resolution does not look at wheel tags: a pin whose release has no wheel for the
    # oldest Python (atheris 3.1 for 3.11) would only fail at install time.
    verify = [uv, "pip", "compile", str(lock.path.relative_to(ROOT)), *python, "--quiet"]
    verify += ["--python-platform", CI_PLATFORM, "--no-build", "--output-file", "/dev/null"]
    subprocess.run(verify, cwd=ROOT, check=True)


def problems() -> Iterator[str]:
    """What makes the locks disagree with pyproject.toml (no network: pins and specifiers only)."""
    locked = {lock.path: pins(lock.path) for lock in LOCKS if lock.path.exists()}
    for lock in LOCKS:
        name = lock.path.relative_to(ROOT)
        if lock.path not in locked:
            yield f"{name} is missing"
            continue
        have = locked[lock.path]
        for package, versions in sorted(have.items()):
            for version, hashes in versions.items():
                if hashes == 0:
                    yield f"{name}: {package}=={version} has no hash"
        for req in requirements(lock.extras):
            package = canonicalize_name(req.name)
            pinned = sorted(have.get(package, {}))
            if not pinned:
                yield f"{name}: {req} is not locked"
                continue
            if not any(req.specifier.contains(v, prereleases=True) for v in pinned):
                yield f"{name}: {package} {[str(v) for v in pinned]} does not satisfy {req}"
                continue
            floors = [Version(s.version) for s in req.specifier if s.operator in (">=", "==")]
            if lock.lowest and floors and pinned[0] != max(floors):
                yield (
                    f"{name}: installs {package} {pinned[0]}, not the floor of {req} (after `make lock`, "
                    f"that floor cannot be installed with the rest: declare >={pinned[0]})"
                )
    run, dev = locked.get(RUN_LOCK, {}), locked.get(DEV_LOCK, {})
    for package, at in sorted(run.items()):
        if package in dev and set(dev[package]) != set(at):
            yield f"run.lock pins {package} at {_str(at)} but dev.lock at {_str(dev[package])}"


def _str(versions: dict[Version, int]) -> str:
    return ", ".join(sorted(map(str, versions)))


def check() -> int:
    found = list(problems())
    if found:
        print(
            "requirements/ does not match pyproject.toml; run `make lock`:",
            *found,
            sep="\n  ",
            file=sys.stderr,
        )
        return 1
    print(f"requirements/: {', '.join(lock.path.name for lock in LOCKS)} match pyproject.toml")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="fail if the locks do not match pyproject.toml")
    group.add_argument("--upgrade", action="store_true", help="newest allowed release of every package")
    args = parser.parse_args(argv)
    if args.check:
        return check()
    LOCK_DIR.mkdir(exist_ok=True)
    for lock in LOCKS:  # dev.lock first: run.lock is resolved within its pins
        resolve(lock, upgrade=args.upgrade)
    return check()


if __name__ == "__main__":
    sys.exit(main())
