#!/usr/bin/env bash
# Refresh the dashboard chapter's screenshots: run the browser test (which
# writes one screenshot per page under target/dashboard/), then copy them
# next to the chapter (docs/src/operators/dashboard/).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test -p quiver-tests --test all -- faces::browser --exact faces::browser::every_page_works_in_chromium_and_markup_from_outside_stays_text
target_dir="${CARGO_TARGET_DIR:-target}"
mkdir -p docs/src/operators/dashboard
for page in catalog footprint search call live health; do
    cp "$target_dir/dashboard/$page.png" "docs/src/operators/dashboard/$page.png"
done
echo "copied $(ls docs/src/operators/dashboard | wc -l) screenshots into docs/src/operators/dashboard/"
