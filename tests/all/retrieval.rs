//! Retrieval quality and prompt cost on real corpora (`tests/data/corpus`):
//! the BFCL queries against their pooled tools, and the token cost of the
//! 950 real MCP tools in each mode.

use quiver::disclosure::search::SearchIndex;
use quiver_tests::bfcl::{bfcl, recall};
use quiver_tests::{TestHost, corpus};

/// Recall@6 measured on `live_multiple.jsonl` pooled, minus a margin; see
/// BENCHMARKS.md for the measured figures. A change that lowers it fails.
const RECALL_AT_6_FLOOR: f64 = 0.89;

#[test]
fn bfcl_live_multiple_pooled_recall_at_6_holds_its_floor() {
    let (queries, tools) = bfcl("live_multiple.jsonl");
    assert!(tools.len() > 900, "{} tools pooled", tools.len());
    let index = SearchIndex::for_records(&tools);
    let ([r1, r3, r6, r10], mrr) = recall(&index, &queries);
    eprintln!("recall@1 {r1:.3} @3 {r3:.3} @6 {r6:.3} @10 {r10:.3} MRR {mrr:.3} over {} queries", queries.len());
    assert!(r6 >= RECALL_AT_6_FLOOR, "recall@6 fell to {r6:.3} (floor {RECALL_AT_6_FLOOR})");
}

#[tokio::test]
async fn progressive_disclosure_saves_99_percent_of_the_mcp_corpus_tokens() {
    let t = TestHost::builder().mcp(corpus("mcp-tools")).build();
    let catalog = t.host.catalog();
    assert_eq!(catalog.mcp_servers().count(), 28);
    assert_eq!(catalog.tools().len(), 950);
    // Every model-facing name is valid for every provider, and unique.
    let names: std::collections::BTreeSet<String> = catalog.tools().iter().map(|r| r.name.clone()).collect();
    assert_eq!(names.len(), 950);
    assert!(names.iter().all(|n| quiver::catalog::names::is_valid(n)));

    let report = t.host.token_report(None).await.unwrap();
    let saved = report.progressive.reduction_from(&report.full);
    eprintln!(
        "full {} -> progressive {} tokens (o200k): {saved:.2}% saved",
        report.full.o200k, report.progressive.o200k
    );
    assert!(saved >= 99.0, "only {saved:.2}% saved");
    assert!(report.full.o200k > 200_000, "the corpus costs {} tokens in full", report.full.o200k);
}
