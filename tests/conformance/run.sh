#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) against
# Quiver over streamable HTTP, in both protocol revisions:
#   1. quiver-conformance-server (Quiver with the suite's fixtures beside its own
#      tools): each revision's whole requirement set, scored or not;
#   2. plain `quiver serve --http`: the scenarios that need no fixture.
# check.py holds every run to baseline.toml: a failure not listed there fails,
# and so does a listed one that passes.
#
# usage: tests/conformance/run.sh [DIR]   (DIR holds the built binaries;
#        default target/debug). Needs python3; Node 22 comes from npm.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:-target/debug}")
out=$PWD/target/conformance
suite=@modelcontextprotocol/conformance@0.2.0-alpha.12
rm -rf "$out"
mkdir -p "$out"
for binary in quiver quiver-conformance-server; do
    [ -x "$bin/$binary" ] || { echo "no $bin/$binary: run cargo test first (it builds both)"; exit 1; }
done

conformance() { (cd "$out" && npx -y -p node@22 -p "$suite" -- conformance "$@"); }

# Start a server that announces its MCP URL on stdout or stderr; no polling:
# `read` blocks until the line is written. The rest of its output is kept.
servers=()
trap 'for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT
start() {
    local name=$1 line
    shift
    exec 3< <("$@" 2>&1)
    servers+=("$!")
    while IFS= read -r line <&3; do
        url=$(grep -o 'http://[^ ,]*/mcp' <<<"$line" || true)
        [ -n "$url" ] && break
    done
    [ -n "${url:-}" ] || { echo "$name exited before it listened"; return 1; }
    cat <&3 >"$out/$name.log" &
    exec 3<&-
    echo "$name listens at $url"
}

status=0
hold() { # results dir, baseline section
    python3 tests/conformance/check.py "$1" tests/conformance/baseline.toml "$2" || status=1
}

start fixture "$bin/quiver-conformance-server" 127.0.0.1:0
for rev in 2025-11-25 2026-07-28; do
    conformance server --url "$url" --requirements "$rev" -o "$out/fixture-$rev" >"$out/fixture-$rev.txt" 2>&1 ||
        { echo "the suite failed a scored scenario (fixture, $rev): see $out/fixture-$rev.txt"; status=1; }
    hold "$out/fixture-$rev" "fixture.$rev"
done

start quiver "$bin/quiver" serve --http 127.0.0.1:0 --no-watch
declare -A applicable=(
    [2025-11-25]="server-initialize ping tools-list server-sse-multiple-streams dns-rebinding-protection
                  server-session-lifecycle server-sse-polling"
    [2026-07-28]="server-stateless tools-list caching dns-rebinding-protection http-header-validation
                  server-sse-multiple-streams input-required-result-unsupported-methods"
)
for rev in 2025-11-25 2026-07-28; do
    for scenario in ${applicable[$rev]}; do
        conformance server --url "$url" --scenario "$scenario" --spec-version "$rev" -o "$out/quiver-$rev" \
            >>"$out/quiver-$rev.txt" 2>&1 || true # held by check.py, which knows the expected failures
        compgen -G "$out/quiver-$rev/server-$scenario-*/checks.json" >/dev/null ||
            { echo "$scenario ($rev) produced no results: see $out/quiver-$rev.txt"; status=1; }
    done
    hold "$out/quiver-$rev" "quiver.$rev"
done
exit $status
