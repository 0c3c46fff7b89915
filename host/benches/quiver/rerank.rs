//! The quality mode: all-MiniLM-L6-v2 (candle) re-ranking the default
//! ranking's first 30, on every retrieval set, and what it costs.

use std::fmt::Write;
use std::path::PathBuf;
use std::sync::Arc;

use quiver::Host;
use quiver::disclosure::search::analyzer::Analyzer;
use quiver::disclosure::search::model::StaticModel;
use quiver::disclosure::search::rerank::{self, Reranker};
use quiver::disclosure::search::{Arm, SearchIndex};
use quiver_tests::bfcl::{bfcl, recall, top10};
use quiver_tests::corpus;
use quiver_tests::paraphrases::{Paraphrase, everyday, paraphrases, score};

use crate::{Stats, ms};

/// Where `.ci/run` puts the weights (`QUIVER_MINILM` names another folder).
fn weights() -> PathBuf {
    std::env::var_os("QUIVER_MINILM")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/minilm"), PathBuf::from)
}

const ARMS: [(Arm, &str); 2] = [(Arm::Feedback, "default (hybrid + feedback)"), (Arm::Reranked, "re-ranked (MiniLM)")];

pub(crate) fn section(options: &crate::Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Quality mode: a transformer re-ranks the first 30\n").unwrap();
    let dir = weights();
    if let Err(why) = rerank::check(&dir) {
        writeln!(report, "Not measured: {why}.\n").unwrap();
        return;
    }
    let rss = crate::rss_bytes();
    let (reranker, load) = crate::time(|| Arc::new(Reranker::load(&dir, None).expect("the weights load")));
    let model_bytes = crate::rss_bytes().saturating_sub(rss);
    let model = StaticModel::bundled().expect("the bench is built with the bundled model");
    let loaded = reranker.clone();
    let analyzer = Arc::new(
        Analyzer::new(Some(model), None).with_reranker(Box::new(move || Some(loaded)) as Box<dyn FnOnce() -> _ + Send>),
    );
    writeln!(
        report,
        "`[search] rerank_model` (feature `minilm`): all-MiniLM-L6-v2 (`{}`), run by candle on the CPU, re-orders \
         the default ranking's first {} by 0.5 · cosine − 0.1 · ln(rank + 2). Loading the weights took {} ms and {:.0} \
         MiB. Each set is ranked both ways by the same index, every tool's vector computed first.\n",
        reranker.id(),
        rerank::CANDIDATES,
        ms(load),
        model_bytes as f64 / f64::from(1 << 20)
    )
    .unwrap();
    writeln!(report, "| set | ranker | recall@1 | @3 | @6 | @10 | MRR | complete@6 |").unwrap();
    writeln!(report, "|---|---|---:|---:|---:|---:|---:|---:|").unwrap();
    for file in ["live_multiple.jsonl", "multiple.jsonl"] {
        let (mut queries, tools) = bfcl(file);
        if options.smoke {
            queries.truncate(3);
        }
        let index = SearchIndex::for_records(&tools, &analyzer);
        if !options.smoke {
            index.warm_now();
        }
        for (arm, name) in ARMS {
            let ([r1, r3, r6, r10], mrr) = recall(&queries, |q| top10(&index, arm, q));
            writeln!(report, "| BFCL `{file}` | {name} | {r1:.3} | {r3:.3} | {r6:.3} | {r10:.3} | {mrr:.3} | |")
                .unwrap();
        }
    }
    let _guard = runtime.enter();
    let corpus_host = Host::builder().mcp_dir(corpus("mcp-tools")).cache_dir(None).build().unwrap();
    let demo_host = Host::builder().bundled().demo_databases().cache_dir(None).build().unwrap();
    let mut latency = None;
    for (set, host, mut rows) in [("paraphrase", &corpus_host, paraphrases()), ("everyday", &demo_host, everyday())] {
        if options.smoke {
            rows.truncate(3);
        }
        let index = SearchIndex::for_catalog(&host.catalog(), &analyzer);
        let (_, warm) = crate::time(|| {
            if !options.smoke {
                index.warm_now()
            }
        });
        for (arm, name) in ARMS {
            let s = score(&rows, |q| top10(&index, arm, q));
            let [r1, r3, r6, r10] = s.recall;
            let complete = s.complete_at_6;
            writeln!(
                report,
                "| {set} | {name} | {r1:.3} | {r3:.3} | {r6:.3} | {r10:.3} | {:.3} | {complete:.3} |",
                s.mrr
            )
            .unwrap();
        }
        if set == "paraphrase" {
            let halves = |arm: Arm| {
                let half =
                    |parity: usize| -> Vec<Paraphrase> { rows.iter().skip(parity).step_by(2).cloned().collect() };
                [0, 1].map(|parity| score(&half(parity), |q| top10(&index, arm, q)).recall[2])
            };
            let (before, after) = (halves(Arm::Feedback), halves(Arm::Reranked));
            writeln!(
                report,
                "| paraphrase, even / odd requests | need recall@6 | | | {:.3} → {:.3} / {:.3} → {:.3} | | | |",
                before[0], after[0], before[1], after[1]
            )
            .unwrap();
            latency = Some((index.len(), warm / index.len().max(1) as u32, timings(options, &index, &rows)));
        }
    }
    let (texts, per_text, [default, reranked]) = latency.expect("the paraphrase set ran");
    writeln!(
        report,
        "\nCost on the 950 MCP tools: the warm-up embedded {texts} texts at {} ms each (wall time, every core; a \
         host does it in the background once per text, and keeps them on disk); a query with every \
         candidate's vector kept: p50 **{} ms** (p99 {} ms) re-ranked against {} ms (p99 {} ms) by default, one thread. \
         The test `the_quality_mode_gains_on_both_sets_and_each_half` holds the floors.\n",
        ms(per_text),
        ms(reranked.median()),
        ms(reranked.pct(0.99)),
        ms(default.median()),
        ms(default.pct(0.99)),
    )
    .unwrap();
}

/// Query latency both ways, every candidate's vector kept.
fn timings(options: &crate::Options, index: &SearchIndex, rows: &[Paraphrase]) -> [Stats; 2] {
    let reps = options.reps(rows.len());
    let time = |arm: Arm| {
        let samples = rows
            .iter()
            .cycle()
            .take(reps)
            .map(|row| crate::time(|| index.search_with(arm, &row.query, 5, |_| true)).1)
            .collect();
        Stats::new(samples)
    };
    [time(Arm::Feedback), time(Arm::Reranked)]
}
