//! Every fuzz target's committed corpus and every crash a campaign found
//! (`fuzz/corpus/<target>`, `fuzz/regressions/<target>`), replayed through
//! the same functions the fuzzer calls, in the plain build: a crash fixed
//! once stays fixed. The SQL corpus also runs on PostgreSQL.

use std::path::{Path, PathBuf};

use quiver::contract::Access;
use quiver::fuzzing::{SqlHarness, schema};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The committed inputs of `target`: its corpus and its regressions.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut inputs = Vec::new();
    for folder in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(fuzz_dir().join(folder).join(target)) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            inputs.push((path.clone(), std::fs::read(&path).expect("read a corpus entry")));
        }
    }
    inputs.sort();
    inputs
}

fn replay(target: &str, run: impl Fn(&[u8])) {
    let inputs = inputs(target);
    assert!(!inputs.is_empty(), "fuzz/corpus/{target} is empty: run fuzz/seeds.py");
    for (path, data) in inputs {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&data)));
        assert!(result.is_ok(), "{target}: {} fails again", path.display());
    }
}

#[test]
fn config_corpus_replays() {
    replay("config", quiver::fuzzing::config);
}

#[test]
fn skill_corpus_replays() {
    replay("skill", quiver::fuzzing::skill);
}

#[test]
fn stub_corpus_replays() {
    replay("stub", quiver::fuzzing::stub);
}

#[test]
fn plain_types_corpus_replays() {
    replay("plain_types", quiver::fuzzing::plain_types);
}

#[test]
fn policy_corpus_replays() {
    replay("policy", quiver::fuzzing::policy);
}

#[test]
fn plain_values_corpus_replays() {
    replay("plain_values", quiver::fuzzing::plain_values);
}

#[test]
fn oci_manifest_corpus_replays() {
    replay("oci_manifest", quiver::fuzzing::oci_manifest);
}

#[test]
fn oci_signature_corpus_replays() {
    replay("oci_signature", quiver::fuzzing::oci_signature);
}

#[test]
fn oci_credentials_corpus_replays() {
    replay("oci_credentials", quiver::fuzzing::oci_credentials);
}

#[test]
fn oci_bundle_corpus_replays() {
    replay("oci_bundle", quiver::fuzzing::oci_bundle);
}

#[test]
fn token_count_corpus_replays() {
    replay("token_count", quiver::fuzzing::token_count);
}

#[test]
fn envelope_corpus_replays() {
    replay("envelope", quiver::fuzzing::envelope);
}

#[test]
fn access_token_corpus_replays() {
    replay("access_token", quiver::fuzzing::access_token);
}

#[test]
fn jwks_corpus_replays() {
    replay("jwks", quiver::fuzzing::jwks);
}

#[test]
fn trace_context_corpus_replays() {
    replay("trace_context", quiver::fuzzing::trace_context);
}

#[test]
fn stdio_corpus_replays() {
    replay("stdio", quiver::fuzzing::stdio);
}

#[test]
fn mcp_tools_corpus_replays() {
    replay("mcp_tools", quiver::fuzzing::mcp_tools);
}

#[test]
fn openapi_corpus_replays() {
    replay("openapi", quiver::fuzzing::openapi);
}

#[test]
fn manifest_corpus_replays() {
    replay("manifest", quiver::fuzzing::manifest);
}

/// The SQL corpus on SQLite's twins (as the fuzzer runs it), then every
/// statement on two throwaway PostgreSQL databases that differ only in
/// their hidden values, at `read` access, with the same oracle.
#[test]
fn sql_corpus_replays_on_sqlite_and_postgresql() {
    replay("sql", quiver::fuzzing::sql);
    let server = quiver_tests::postgres::Postgres::start();
    server.create("fuzz_a", &schema(0));
    server.create("fuzz_b", &schema(1));
    let urls = [server.url("postgres", "fuzz_a"), server.url("postgres", "fuzz_b")];
    let harness = SqlHarness::postgres([&urls[0], &urls[1]], &server.password_file());
    let mut seen = std::collections::BTreeSet::new();
    for (path, data) in inputs("sql") {
        let Some((_, text)) = data.split_first() else { continue };
        let Ok(sql) = std::str::from_utf8(text) else { continue };
        if !seen.insert(sql.to_owned()) {
            continue;
        }
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| harness.check(sql, Access::Read)));
        assert!(result.is_ok(), "sql on PostgreSQL: {} fails", path.display());
    }
}

#[test]
fn guard_corpus_replays() {
    replay("guard", quiver::fuzzing::guard);
}

#[test]
fn sign_in_corpus_replays() {
    replay("sign_in", quiver::fuzzing::sign_in);
}
