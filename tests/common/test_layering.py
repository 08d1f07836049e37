"""``ninetynine/common`` is shared by every service and imports none of them.

A service-specific piece (the engine's reason table, the session's rooms...) belongs in that
service's package; common code that reaches into one would drag it into every process and tie
the services' releases together.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import ninetynine.common

COMMON = Path(ninetynine.common.__file__).parent
SERVICES = ("ninetynine.engine", "ninetynine.session", "ninetynine.gateway")


def _imported(path: Path) -> set[str]:
    """Every module name ``path`` imports, anywhere in the file (relative ones made absolute)."""
    package = "ninetynine.common"
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def _is_service(name: str) -> bool:
    return any(name == service or name.startswith(service + ".") for service in SERVICES)


def test_no_common_module_imports_a_service_package() -> None:
    modules = sorted(COMMON.glob("*.py"))
    assert modules, COMMON
    offending = {path.name: sorted(name for name in _imported(path) if _is_service(name)) for path in modules}
    assert {name: found for name, found in offending.items() if found} == {}


def test_importing_every_common_module_loads_no_service() -> None:
    names = [
        f"ninetynine.common.{path.stem}" for path in sorted(COMMON.glob("*.py")) if path.stem != "__init__"
    ]
    script = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print('\\n'.join(sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = done.stdout.split()
    assert "ninetynine.common.errors" in loaded
    assert sorted(name for name in loaded if _is_service(name)) == []
