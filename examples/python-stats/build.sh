#!/usr/bin/env bash
# Build the Python example plugin into a WebAssembly component:
#   examples/python-stats/build.sh OUT.wasm [SOURCE_DIR]
# then write its stub and schemas with `quiver package OUT.wasm`.
# Needs componentize-py 0.25.1 (pip install "componentize-py==0.25.1"; .ci/run
# installs it into target/venv, the default here; COMPONENTIZE_PY overrides).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
componentize="${COMPONENTIZE_PY:-$root/target/venv/bin/componentize-py}"
exec "$componentize" -d "$root/wit" -w quiver:plugin/tool@0.1.1 componentize \
    -p "${2:-$here}" -p "$root/sdk/python" app -o "$1"
