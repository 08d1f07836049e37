#!/usr/bin/env bash
# Lint the protos and check them for breaking changes against the previous commit.
# buf comes from the pinned npm package @bufbuild/buf: run `npm ci` first.
set -euo pipefail
cd "$(dirname "$0")/.."
BUF=node_modules/.bin/buf
if [[ ! -x "$BUF" ]]; then
  echo "buf_check: $BUF missing; run 'npm ci' at the repo root" >&2
  exit 2
fi

"$BUF" lint protos
echo "buf lint: ok"

# The previous commit is the baseline. It must exist and already have the protos module;
# a shallow clone or the commit that introduces protos/ has nothing to compare with.
if ! git rev-parse --verify --quiet HEAD~1 >/dev/null; then
  echo "buf breaking: skipped (no previous commit in this clone)"
  exit 0
fi
if ! git cat-file -e HEAD~1:protos/buf.yaml 2>/dev/null; then
  echo "buf breaking: skipped (HEAD~1 has no protos/buf.yaml)"
  exit 0
fi
"$BUF" breaking protos --against ".git#ref=HEAD~1,subdir=protos"
echo "buf breaking (against HEAD~1): ok"
