//! The fuzzing campaign's figures. The campaign (`bash fuzz/run.sh`) needs an
//! instrumented build and an hour, so it runs on demand and writes
//! `fuzz/REPORT.md`; this section carries that report into `BENCHMARKS.md`
//! so that every figure lives in one place.

use std::fmt::Write as _;
use std::path::Path;

pub(crate) fn section(_: &crate::Options, _: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Fuzzing\n").unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/REPORT.md");
    match std::fs::read_to_string(&path) {
        Ok(campaign) => writeln!(report, "{}\n", campaign.trim_end()).unwrap(),
        Err(_) => {
            writeln!(report, "No campaign has been run yet: `bash fuzz/run.sh` writes `fuzz/REPORT.md`.\n").unwrap()
        }
    }
}
