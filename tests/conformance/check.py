"""Hold a conformance run to its baseline.

usage: check.py RESULTS_DIR BASELINE_TOML SECTION

RESULTS_DIR is the suite's `-o` directory (one `server-<scenario>-<time>/checks.json`
per scenario). SECTION names a table of BASELINE_TOML, e.g. `fixture.2026-07-28`,
whose keys are `scenario` or `scenario:check-id` and whose values are the reason.

The suite's own `--expected-failures` skips the scenarios a revision does not score
(extensions, pending ones); this check does not: every FAILURE must be listed, and
every listed entry must still fail (a stale entry is an error too).
"""

import json
import pathlib
import re
import sys
import tomllib


def main(results_dir: str, baseline_path: str, section: str) -> int:
    table = tomllib.loads(pathlib.Path(baseline_path).read_text())
    for key in section.split("."):
        table = table.get(key, {})
    expected = dict(table)
    for entry, reason in expected.items():
        if not isinstance(reason, str) or not reason.strip():
            print(f"baseline {section}: {entry} needs a one-line reason")
            return 1

    runs = sorted(pathlib.Path(results_dir).glob("server-*/checks.json"))
    if not runs:
        print(f"no results under {results_dir}: did the suite run?")
        return 1
    failures, passed, warnings, matched = [], 0, 0, set()
    for checks_file in runs:
        scenario = re.sub(r"^server-(.*)-\d{4}-\d\d-\d\dT.*$", r"\1", checks_file.parent.name)
        for check in json.loads(checks_file.read_text()):
            status = check.get("status")
            if status == "SUCCESS":
                passed += 1
            elif status == "WARNING":
                warnings += 1
            elif status == "FAILURE":
                whole, one = scenario, f"{scenario}:{check.get('id')}"
                if whole in expected or one in expected:
                    matched.add(whole if whole in expected else one)
                else:
                    failures.append(f"{one}: {check.get('errorMessage', '')}")

    stale = sorted(set(expected) - matched)
    print(
        f"{section}: {len(runs)} scenarios, {passed} checks passed, {warnings} warnings, "
        f"{len(matched)} expected failures, {len(failures)} unexpected, {len(stale)} stale"
    )
    for failure in failures:
        print(f"  UNEXPECTED {failure}")
    for entry in stale:
        print(f"  STALE {entry} (passes now, or did not run): remove it from {baseline_path}")
    return 1 if failures or stale else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
