#!/usr/bin/env bash
# Build the plain Python test component (world acme:plain/scripted of
# tests/components/wit/plain.wit) into a WebAssembly component:
#   tests/components/plain-py/build.sh OUT.wasm
# Needs componentize-py 0.25.1 (pip install "componentize-py==0.25.1"; .ci/run
# installs it into target/venv, the default here; COMPONENTIZE_PY overrides).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../../.."
componentize="${COMPONENTIZE_PY:-$root/target/venv/bin/componentize-py}"
exec "$componentize" -d "$here/../wit" -w acme:plain/scripted@0.1.0 componentize -p "$here" app -o "$1"
