#!/usr/bin/env bash
# The fuzzing campaign, on demand (never part of .ci/run): builds every
# target with cargo-fuzz on the stable toolchain (`--sanitizer none`: the
# coverage instrumentation is stable; AddressSanitizer is not), runs each for
# SECONDS (default 300) with the committed corpus as seeds, merges what was
# new into fuzz/corpus/<target> (minimised: only inputs that add coverage),
# copies every crash into fuzz/regressions/<target> (cargo test replays both),
# and writes the figures to target/fuzz-report.md (executions, coverage,
# corpus size, crashes) for BENCHMARKS.md's "Fuzzing" section.
#
#   bash fuzz/run.sh [SECONDS] [TARGET ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-300}"
shift || true
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list)
fi
cargo fuzz build --sanitizer none
report=target/fuzz-report.md
mkdir -p target fuzz/regressions
{
    echo "| target | seconds | executions | exec/s | coverage (edges) | features | corpus | crashes |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
} > "$report"
for target in "${targets[@]}"; do
    work=$(mktemp -d)
    mkdir -p "fuzz/corpus/$target" "fuzz/regressions/$target" "$work/new" "$work/artifacts"
    log="$work/log"
    # The memory limit is libFuzzer's RSS watchdog (a malloc limit needs a
    # sanitizer); the OpenAPI target counts its own allocations.
    extra=()
    case "$target" in
        openapi | mcp_tools | manifest) extra=(-max_len=65536) ;;
    esac
    cargo fuzz run --sanitizer none "$target" "$work/new" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 "${extra[@]}" \
        -artifact_prefix="$work/artifacts/" > "$log" 2>&1 || true
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
    # Keep only what adds coverage to the committed corpus.
    if [ -n "$(ls -A "$work/new")" ]; then
        cargo fuzz cmin --sanitizer none "$target" "$work/new" >/dev/null 2>&1 || true
        for file in "$work/new"/*; do
            [ -e "$file" ] || continue
            cp "$file" "fuzz/corpus/$target/$(sha256sum "$file" | cut -c1-16)"
        done
        cargo fuzz cmin --sanitizer none "$target" "fuzz/corpus/$target" >/dev/null 2>&1 || true
    fi
    crashes=0
    for crash in "$work/artifacts"/*; do
        [ -e "$crash" ] || continue
        crashes=$((crashes + 1))
        cp "$crash" "fuzz/regressions/$target/$(basename "$crash")"
    done
    corpus=$(ls "fuzz/corpus/$target" | wc -l)
    echo "| $target | $seconds | ${execs:-?} | ${speed:-?} | ${cov:-?} | ${ft:-?} | $corpus | $crashes |" >> "$report"
    echo "$target: ${execs:-?} executions, cov ${cov:-?}, $crashes crashes (log: $log)"
done
cat "$report"
