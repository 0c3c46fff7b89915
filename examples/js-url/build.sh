#!/usr/bin/env bash
# Build the JavaScript example plugin into a WebAssembly component:
#   examples/js-url/build.sh OUT.wasm
# then write its stub and schemas with `quiver package OUT.wasm`.
# Needs `npm install --prefix examples/js-url` first (.ci/run does it): esbuild
# bundles app.js with the helper and zod into one module, componentize-js
# (StarlingMonkey) makes the component. `-d http fetch-event`: a tool may
# not import wasi:http.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
bin="$here/node_modules/.bin"
bundle="$(mktemp -d)/bundle.js"
NODE_PATH="$here/node_modules" "$bin/esbuild" "$here/app.js" --bundle --format=esm --platform=neutral \
    --main-fields=module,main --log-level=warning --outfile="$bundle"
"$bin/componentize-js" "$bundle" --wit "$root/wit" -n quiver:plugin/tool@0.1.1 -d http fetch-event -o "$1"
rm -r "$(dirname "$bundle")"
