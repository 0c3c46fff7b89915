#!/usr/bin/env bash
# Build the plain JavaScript test component (world acme:plain/scripted of
# tests/components/wit/plain.wit) into a WebAssembly component:
#   tests/components/plain-js/build.sh OUT.wasm
# Needs `npm install --prefix examples/js-url` first (.ci/run does it): its
# componentize-js (StarlingMonkey) makes the component. app.js imports
# nothing, so there is nothing to bundle. `-d ...`: every WASI feature the
# component does not need is left out, so it imports as little as it can.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../../.."
bin="$root/examples/js-url/node_modules/.bin"
"$bin/componentize-js" "$here/app.js" --wit "$here/../wit" -n acme:plain/scripted@0.1.0 \
    -d stdio random clocks http fetch-event -o "$1"
