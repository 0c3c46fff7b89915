//! The re-ranking study's input: every query of the retrieval sets (BFCL
//! `live_multiple` and `multiple`, the paraphrases over the 950 MCP tools,
//! the everyday set over the bundled tools and the demo database) with
//! the default ranker's top 30 candidates and their texts, one JSON line
//! each, for `minilm.py` to re-rank offline.
//!
//! ```text
//! cargo run -p quiver --features study --example rerank_candidates -- target/rerank/rows.jsonl
//! ```

use std::io::Write;
use std::sync::Arc;

use quiver::disclosure::search::analyzer::Analyzer;
use quiver::disclosure::search::model::StaticModel;
use quiver::disclosure::search::{Arm, SearchIndex};
use quiver_tests::bfcl::bfcl;
use quiver_tests::paraphrases::{everyday, paraphrases};
use quiver_tests::{TestHost, corpus};
use serde_json::{Value, json};

/// Candidates per query.
const CANDIDATES: usize = 30;

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "target/rerank/rows.jsonl".into());
    if let Some(dir) = std::path::Path::new(&path).parent() {
        std::fs::create_dir_all(dir).expect("create the output folder");
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("create the output file"));
    let mut row = |set: &str, query: &str, expected: Value, candidates: Vec<Value>| {
        let line = json!({"set": set, "query": query, "expected": expected, "candidates": candidates});
        writeln!(out, "{line}").expect("write a row");
    };
    let analyzer = Arc::new(Analyzer::new(Some(StaticModel::bundled().expect("the bundled model")), None));
    for file in ["live_multiple.jsonl", "multiple.jsonl"] {
        let (queries, tools) = bfcl(file);
        let index = SearchIndex::for_records(&tools, &analyzer);
        for (query, expected) in queries {
            let hits = index.search_with(Arm::Feedback, &query, CANDIDATES, |_| true);
            row(file, &query, json!([[expected]]), hits.into_iter().map(|(e, _)| json!([e.name, e.summary])).collect());
        }
    }
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let _entered = runtime.enter();
    let t = TestHost::builder().mcp(corpus("mcp-tools")).build();
    let catalog = t.host.catalog();
    for paraphrase in paraphrases() {
        let hits = t.host.search(&paraphrase.query, CANDIDATES, None).expect("search");
        let candidates = hits
            .into_iter()
            .map(|(name, _, summary, _)| {
                let record = catalog.tool(&name).and_then(|e| catalog.record(e));
                json!([name, record.map_or(summary, |r| r.description)])
            })
            .collect();
        row("paraphrase", &paraphrase.query, json!(paraphrase.expected), candidates);
    }
    let t = TestHost::builder().bundled().demo().build();
    for everyday in everyday() {
        let hits = t.host.search(&everyday.query, CANDIDATES, None).expect("search");
        let candidates = hits.into_iter().map(|(name, _, summary, _)| json!([name, summary])).collect();
        row("everyday", &everyday.query, json!(everyday.expected), candidates);
    }
    eprintln!("wrote {path}");
}
