#!/usr/bin/env python3
"""Generate the Python gRPC code for every ``protos/ninetynine/**/*.proto`` into the package.

One command produces ``*_pb2.py``, ``*_pb2_grpc.py`` and the ``.pyi`` stubs (mypy-protobuf,
including the gRPC stubs) for each versioned API package (``ninetynine/engine/v1`` next to the
engine's hand-written code, and so on), plus the ``__init__.py`` that makes each a regular package.
Only the ``<service>/v<N>`` directories are generated; nothing else in ``ninetynine/`` is touched. Output is deterministic: the same
protos and the same pinned tools give byte-identical files: the generator (grpcio-tools, whose
protoc stamps the gencode's protobuf and grpc versions, and mypy-protobuf) must be the release
pyproject.toml's ``protos`` extra pins, or the script stops and says how to install it.

    python scripts/gen_protos.py           # regenerate ninetynine/*/v*/
    python scripts/gen_protos.py --check   # regenerate into a temp dir; exit 1 if the package differs
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.metadata
import shutil
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
GEN_ROOT = ROOT
PACKAGE = "ninetynine"
INIT_TEXT = '"""Generated from protos/ by scripts/gen_protos.py. Do not edit."""\n'


def proto_files() -> list[Path]:
    return sorted((PROTO_ROOT / PACKAGE).rglob("*.proto"))


def _plugin(name: str) -> str:
    """The protoc plugin installed next to this interpreter (the venv's bin/)."""
    candidate = Path(sys.executable).parent / name
    found = str(candidate) if candidate.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found: install requirements/dev.lock (make venv)")
    return found


def require_pinned_generator() -> None:
    """Stop unless the installed generator is exactly what pyproject's ``protos`` extra pins."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        pins = tomllib.load(f)["project"]["optional-dependencies"]["protos"]
    wrong = []
    for pin in pins:
        name, _, wanted = (part.strip() for part in pin.partition("=="))
        try:
            found = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found = "not installed"
        if found != wanted:
            wrong.append(f"{name}=={wanted} (found {found})")
    if wrong:
        raise SystemExit(
            f"scripts/gen_protos.py generates with {', '.join(wrong)}: another release writes other "
            "files. Run `make protos` (installs requirements/dev.lock into .venv) or "
            "`pip install --require-hashes -r requirements/dev.lock`."
        )


def generate(out_root: Path) -> None:
    """Write the package for every proto under ``out_root/ninetynine``."""
    require_pinned_generator()
    from grpc_tools import protoc  # the protos extra: imported only when generating

    files = proto_files()
    if not files:
        raise SystemExit(f"no .proto files under {PROTO_ROOT / PACKAGE}")
    out_root.mkdir(parents=True, exist_ok=True)
    include = Path(protoc.__file__).parent / "_proto"  # google/protobuf well-known types
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
        f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
        f"--python_out={out_root}",
        f"--grpc_python_out={out_root}",
        f"--mypy_out={out_root}",
        f"--mypy_grpc_out={out_root}",
        *(str(f.relative_to(PROTO_ROOT)) for f in files),
    ]
    status = protoc.main(args)
    if status != 0:
        raise SystemExit(f"protoc failed with status {status}")
    for directory in generated_dirs(out_root):
        (directory / "__init__.py").write_text(INIT_TEXT)
        (directory / "py.typed").write_text("")


def generated_dirs(root: Path) -> list[Path]:
    """The versioned API packages (``ninetynine/<service>/v<N>``) under ``root``."""
    return sorted(p for p in (root / PACKAGE).glob("*/v[0-9]*") if p.is_dir())


def _tree(root: Path) -> dict[str, Path]:
    return {
        str(p.relative_to(root)): p
        for directory in generated_dirs(root)
        for p in sorted(directory.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def check() -> int:
    """Regenerate into a temp dir and compare with the committed generated packages."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh_root = Path(tmp)
        generate(fresh_root)
        fresh = _tree(fresh_root)
        committed = _tree(GEN_ROOT)
        problems = [f"missing: {name}" for name in sorted(fresh.keys() - committed.keys())]
        problems += [f"stale extra: {name}" for name in sorted(committed.keys() - fresh.keys())]
        problems += [
            f"differs: {name}"
            for name in sorted(fresh.keys() & committed.keys())
            if not filecmp.cmp(fresh[name], committed[name], shallow=False)
        ]
    if problems:
        print("generated code is out of date; run `make protos`:", *problems, sep="\n  ", file=sys.stderr)
        return 1
    print(f"{PACKAGE}/*/v*/ is up to date ({len(fresh)} files)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="fail if the generated code is not what the protos produce")
    args = parser.parse_args(argv)
    if args.check:
        return check()
    # Start from scratch so a deleted .proto leaves no stale module behind.
    for directory in generated_dirs(GEN_ROOT):
        shutil.rmtree(directory)
    generate(GEN_ROOT)
    print(f"generated {len(_tree(GEN_ROOT))} files under {PACKAGE}/*/v*/ from {len(proto_files())} protos")
    return 0


if __name__ == "__main__":
    sys.exit(main())
