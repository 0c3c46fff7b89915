#!/usr/bin/env bash
# The fuzzing campaign, on demand (never part of .ci/run). Builds every target
# with cargo-fuzz on the stable toolchain (`--sanitizer none`: the coverage
# instrumentation is stable, AddressSanitizer is not), runs each for SECONDS
# (default 300) seeded with its committed corpus, one lane per core, then:
#
#   - merges into fuzz/corpus/<target> only the inputs that add coverage to it
#     (libFuzzer's -merge=1: the committed seeds, which `cargo test` replays as
#     regressions of known attacks, are never minimised away);
#   - copies every crash, timeout and out-of-memory input into
#     fuzz/regressions/<target> (cargo test replays those too);
#   - writes the figures (executions, exec/s, coverage, corpus, crashes) to
#     fuzz/REPORT.md, which the bench runner copies into BENCHMARKS.md.
#
#   bash fuzz/run.sh [SECONDS] [TARGET ...]      FUZZ_LANES=N to override
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-300}"
shift || true
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list)
fi
lanes="${FUZZ_LANES:-$(nproc)}"
cargo fuzz build --sanitizer none
work=$(mktemp -d)
mkdir -p fuzz/regressions

# One target: run, merge, keep crashes, write its table row.
fuzz_one() {
    local target="$1" dir="$work/$1"
    mkdir -p "fuzz/corpus/$target" "$dir/new" "$dir/artifacts"
    # The memory limit is libFuzzer's RSS watchdog (a malloc limit needs a
    # sanitizer); the OpenAPI target also counts its own allocations.
    local extra=()
    case "$target" in
        openapi | mcp_tools | manifest) extra=(-max_len=65536) ;;
    esac
    # New finds go to $dir/new; the committed corpus is read, not written.
    cargo fuzz run --sanitizer none "$target" "$dir/new" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 "${extra[@]}" \
        -artifact_prefix="$dir/artifacts/" > "$dir/log" 2>&1 || true
    local execs speed cov ft
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/log" | grep -o '[0-9]*$' | tail -1)
    speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$dir/log" | grep -o '[0-9]*$' | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$dir/log" | tail -1 | grep -o '[0-9]*')
    ft=$(grep -o 'ft: [0-9]*' "$dir/log" | tail -1 | grep -o '[0-9]*')
    # How long it fuzzed, as libFuzzer says ("Done N runs in S second(s)");
    # a crash ends a run early and says nothing: executions / speed then.
    local ran
    # (`|| true`: with pipefail, a crashed run's missing line would end this
    # lane before its crash is kept.)
    ran=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$dir/log" | grep -o '[0-9]* second' | grep -o '[0-9]*' | tail -1 || true)
    [ -n "$ran" ] || ran=$(( ${execs:-0} / (${speed:-0} > 0 ? ${speed:-1} : 1) ))
    local before added
    before=$(find "fuzz/corpus/$target" -type f | wc -l)
    if [ -n "$(ls -A "$dir/new")" ]; then
        cargo fuzz run --sanitizer none "$target" "fuzz/corpus/$target" "$dir/new" -- \
            -merge=1 "${extra[@]}" > "$dir/merge.log" 2>&1 || true
    fi
    added=$(($(find "fuzz/corpus/$target" -type f | wc -l) - before))
    local crashes=0
    for crash in "$dir/artifacts"/*; do
        [ -e "$crash" ] || continue
        crashes=$((crashes + 1))
        mkdir -p "fuzz/regressions/$target"
        cp "$crash" "fuzz/regressions/$target/$(basename "$crash")"
    done
    echo "| $target | $(date -u +%Y-%m-%d) | $ran | ${execs:-?} | ${speed:-?} | ${cov:-?} | ${ft:-?} | $before + $added | $crashes |" \
        > "$dir/row"
    echo "$target: ${execs:-?} executions, cov ${cov:-?}, +$added corpus, $crashes crashes (log: $dir/log)"
}

# Lanes: target i goes to lane i mod N; the lanes run side by side.
for ((lane = 0; lane < lanes; lane++)); do
    (
        for ((i = lane; i < ${#targets[@]}; i += lanes)); do
            fuzz_one "${targets[$i]}"
        done
    ) &
done
wait

# The report keeps the latest row of every target: a campaign over some
# targets replaces their rows and leaves the others as they were.
for target in $(cargo fuzz list); do
    if [ -f "$work/$target/row" ]; then
        cat "$work/$target/row"
    elif [ -f fuzz/REPORT.md ]; then
        grep "^| $target |" fuzz/REPORT.md || true
    fi
done > "$work/rows"
cpu=$(awk -F'|' '{ s += $4 } END { print int(s / 60) }' "$work/rows")
{
    echo "The latest run of each target (\`bash fuzz/run.sh SECONDS [TARGET…]\`): $cpu CPU-minutes"
    echo "of fuzzing in all; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cargo-fuzz"
    echo "$(cargo fuzz --version | grep -o '[0-9.]*$'), \`--sanitizer none\`. *Seconds* is how long the target ran (a crash"
    echo "ends a run early); *coverage* and *features* are libFuzzer's edge and feature counts at its end; *corpus*"
    echo "is the committed corpus before the run plus what the run merged into it (only inputs that add coverage)."
    echo
    echo "| target | date | seconds | executions | exec/s | coverage (edges) | features | corpus | crashes |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    cat "$work/rows"
} > fuzz/REPORT.md
cat fuzz/REPORT.md
