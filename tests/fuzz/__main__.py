"""Run one harness under libFuzzer: ``python -m tests.fuzz <target> [libFuzzer flags] [corpus dirs/files]``.

    python -m tests.fuzz gateway -runs=20000 -seed=1
    python -m tests.fuzz engine -max_total_time=300 corpus/engine   # grow a corpus you keep
    python -m tests.fuzz gateway artifacts/fuzz/gateway/crash-1a2b  # replay one input

Besides what is given, the harness's seeds go in as an extra corpus directory (a fresh temporary
one), its ``DICTIONARY`` as ``-dict`` and its ``ARGS`` as defaults; crashes are written under
``artifacts/fuzz/<target>/`` unless ``-artifact_prefix`` says otherwise. Replaying files skips the
seeds. The exit status is libFuzzer's: 0 when every run passed.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import signal
import sys
import tempfile
from pathlib import Path

from tests.fuzz import TARGETS

ROOT = Path(__file__).resolve().parents[2]
USAGE = f"usage: python -m tests.fuzz {{{','.join(TARGETS)}}} [libFuzzer flags] [corpus dirs or files]"


def _flag_names(args: list[str]) -> set[str]:
    return {arg.split("=", 1)[0] for arg in args if arg.startswith("-")}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in TARGETS:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        import atheris
    except ImportError:
        print("atheris is not installed (pip install -e '.[test]' on Linux x86_64)", file=sys.stderr)
        return 2
    from tests.fuzz.common import dictionary_line  # imports atheris too

    target, args = argv[0], list(argv[1:])
    harness = importlib.import_module(f"tests.fuzz.{target}")  # instruments the services it imports
    work = tempfile.TemporaryDirectory(prefix=f"fuzz-{target}-")
    given = _flag_names(args)
    extra = [arg for arg in getattr(harness, "ARGS", []) if arg.split("=", 1)[0] not in given]
    prefixes = [arg.split("=", 1)[1] for arg in args if arg.startswith("-artifact_prefix=")]
    if not prefixes:
        prefixes = [f"{ROOT / 'artifacts' / 'fuzz' / target}/"]
        extra.append(f"-artifact_prefix={prefixes[0]}")
    if prefixes[-1].endswith("/"):
        Path(prefixes[-1]).mkdir(parents=True, exist_ok=True)  # libFuzzer only writes into it
    dictionary = getattr(harness, "DICTIONARY", [])
    if dictionary and "-dict" not in given:
        path = Path(work.name) / "dict"
        path.write_text("".join(dictionary_line(token) + "\n" for token in dictionary), encoding="ascii")
        extra.append(f"-dict={path}")
    inputs = [arg for arg in args if not arg.startswith("-")]
    if not any(Path(arg).is_file() for arg in inputs):
        # libFuzzer adds new inputs to the first directory: the caller's, else this temporary one.
        seeds = Path(work.name) / "seeds"
        seeds.mkdir()
        for seed in harness.seeds():
            (seeds / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
        extra.append(str(seeds))
    options = {}
    if hasattr(harness, "custom_mutator"):  # structure-aware mutations (libFuzzer's half of the time)
        options["custom_mutator"] = harness.custom_mutator
    # libFuzzer ends the process with C's exit(), past Python's clean-up: it runs in a child, and
    # this process removes the temporary seeds and dictionary after it and passes on its status.
    child = os.fork()
    if child == 0:
        atheris.Setup([f"tests.fuzz {target}", *args, *extra], harness.TestOneInput, **options)
        atheris.Fuzz()
        os._exit(0)  # not reached: Fuzz() exits
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: libFuzzer prints its stats and stops
    _, status = os.waitpid(child, 0)
    work.cleanup()
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
