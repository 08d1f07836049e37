#!/usr/bin/env bash
# The test suite against the lowest versions pyproject.toml allows: requirements/lowest.lock holds
# every direct runtime, test and build requirement at its declared floor (scripts/lock.py resolves it
# with --resolution lowest-direct and --check fails when a floor is not what it installs), in a venv
# of its own, so every floor we declare is one the tests have passed with.
#
#   bash scripts/test_lowest.sh [pytest args]    # = make test-lowest; CI runs it after `make test`
#
# The venv (LOWEST_VENV, default .venv-lowest) is rebuilt when the lock or pyproject.toml changes.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
VENV=${LOWEST_VENV:-.venv-lowest}
LOCK=requirements/lowest.lock
STAMP=$VENV/.installed-lowest

if [ ! -f "$STAMP" ] || [ "$LOCK" -nt "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --require-hashes -r "$LOCK"
  "$VENV/bin/python" -m pip install -q --no-deps --no-build-isolation -e .
  touch "$STAMP"
fi
echo "lowest versions ($LOCK):" $(grep -oE '^[a-z0-9._-]+==[^ ;]+' "$LOCK" | tr '\n' ' ')
# No cache plugin: .pytest_cache belongs to the main venv's runs.
exec "$VENV/bin/python" -m pytest -p no:cacheprovider "$@"
