//! Disclosure at scale: the MCP corpus copied 12 times (336 servers,
//! 11,400 tools). The progressive prompt with and without its budget, and
//! search on the paraphrase and everyday sets against it, equivalents
//! collapsed or apart, one query or one per need, and what a query costs.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use quiver::catalog::Catalog;
use quiver::{Config, Host};
use quiver_tests::corpus;
use quiver_tests::paraphrases::{Paraphrase, complete_both_ways, everyday, paraphrases, score_sets, splits};
use quiver_tests::scale::{canonical_hits, canonical_rows, corpus_copies};

/// Copies of the corpus: 336 servers, 11,400 tools.
const COPIES: usize = 12;

/// A host over `mcp` (and the bundled tools and demo database, for the
/// everyday set), with `config`.
fn host(runtime: &tokio::runtime::Runtime, mcp: &Path, everyday: bool, config: &str) -> Host {
    let _guard = runtime.enter();
    let config = Config::parse(config, Path::new(".")).expect("a valid config");
    let builder = Host::builder().config(config).mcp_dir(mcp).cache_dir(None);
    let builder = if everyday { builder.bundled().demo_databases() } else { builder };
    builder.build().expect("the host builds")
}

/// Scores of `rows` on `host`, its hits collapsed or apart (top 10).
fn scored(host: &Host, catalog: &Catalog, rows: &[Paraphrase], collapse: bool) -> quiver_tests::paraphrases::Scores {
    score_sets(rows, |query| ranked(host, catalog, query, collapse))
}

fn ranked(host: &Host, catalog: &Catalog, query: &str, collapse: bool) -> Vec<BTreeSet<String>> {
    let hits = if collapse {
        host.search_collapsed(query, 10, None).unwrap()
    } else {
        host.search(query, 10, None).unwrap().into_iter().map(|hit| (hit.0, Vec::new())).collect()
    };
    canonical_hits(catalog, hits)
}

pub(crate) fn at_scale(options: &crate::Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    let copies = corpus_copies(if options.smoke { 2 } else { COPIES });
    let big = host(runtime, copies.path(), false, "");
    let catalog = big.catalog();
    let (servers, tools) = (catalog.mcp_servers().count(), catalog.tools().len());
    writeln!(report, "## Disclosure at scale\n").unwrap();
    writeln!(
        report,
        "The MCP corpus copied {} times, each copy's servers renamed (`github-mcp-server`, `github-mcp-server-c2`, \
         …): **{servers} servers, {tools} tools**, as saved lists (`quiver_tests::scale`). A needed tool counts as \
         found when any copy of it is found. The test `at_scale_the_prompt_fits_its_budget_and_search_finds_every_copy` \
         holds a bounded version (3 copies).\n",
        if options.smoke { 2 } else { COPIES }
    )
    .unwrap();

    // The prompt, with the default budget and with none.
    let budgeted = runtime.block_on(big.token_report(None)).unwrap();
    let unbounded = host(runtime, copies.path(), false, "[disclosure]\nprompt_tokens = 0\n");
    let unbounded = runtime.block_on(unbounded.token_report(None)).unwrap();
    writeln!(report, "| prompt (o200k tokens: every offered meta-tool's definition and the instructions) | tokens |")
        .unwrap();
    writeln!(report, "|---|---:|").unwrap();
    writeln!(
        report,
        "| no budget (`prompt_tokens = 0`): one line per server, every name in the schema | {} |",
        unbounded.progressive.o200k
    )
    .unwrap();
    writeln!(
        report,
        "| the default budget, {} tokens (the budget's own count {}; tiktoken's after it) | **{}** |",
        budgeted.fit.budget, budgeted.fit.tokens, budgeted.progressive.o200k
    )
    .unwrap();
    let folds: Vec<String> = budgeted.fit.folded.iter().map(|(meta, shape)| format!("`{meta}` {shape}")).collect();
    writeln!(report, "\nFolded: {}; overrun: {:?}.\n", folds.join(", "), budgeted.fit.overrun()).unwrap();
    let session = big.session(None).unwrap();
    let prompt = session.system_prompt();
    let excerpt: Vec<&str> = prompt.lines().filter(|l| !l.is_empty()).take(8).collect();
    writeln!(report, "The Tier-1 text begins:\n\n```text\n{}\n…\n```\n", excerpt.join("\n")).unwrap();

    // The paraphrase set, on the corpus itself and at scale.
    let rows = paraphrases();
    let small = host(runtime, &corpus("mcp-tools"), false, "");
    let small_catalog = small.catalog();
    let small_rows = canonical_rows(&small_catalog, &rows);
    let rows = canonical_rows(&catalog, &rows);
    writeln!(
        report,
        "The paraphrase set ({} requests, default hybrid ranker); *collapsed*: equivalent tools (same action, \
         description and schema) take one place and name the others, as `search_tools` answers; *apart*: each \
         copy takes a place of its own.\n",
        rows.len()
    )
    .unwrap();
    writeln!(report, "| catalog | equivalents | need recall@1 | @3 | @6 | @10 | MRR | complete@6 |").unwrap();
    writeln!(report, "|---|---|---:|---:|---:|---:|---:|---:|").unwrap();
    let mut line = |name: &str, how: &str, s: quiver_tests::paraphrases::Scores| {
        let [r1, r3, r6, r10] = s.recall;
        writeln!(
            report,
            "| {name} | {how} | {r1:.3} | {r3:.3} | {r6:.3} | {r10:.3} | {:.3} | {:.3} |",
            s.mrr, s.complete_at_6
        )
        .unwrap();
    };
    line("950 tools", "collapsed", scored(&small, &small_catalog, &small_rows, true));
    line(&format!("{tools} tools"), "collapsed", scored(&big, &catalog, &rows, true));
    line(&format!("{tools} tools"), "apart", scored(&big, &catalog, &rows, false));

    // Several needs at once.
    let splits = splits();
    let (whole, each6) = complete_both_ways(&rows, &splits, 6, |_| 6, |q| ranked(&big, &catalog, q, true));
    let (_, even) = complete_both_ways(&rows, &splits, 6, |n| 6 / n, |q| ranked(&big, &catalog, q, true));
    let (small_whole, small_each6) =
        complete_both_ways(&small_rows, &splits, 6, |_| 6, |q| ranked(&small, &small_catalog, q, true));
    writeln!(
        report,
        "\nSeveral needs in one call (`search_tools` with `queries`): the {} multi-need requests, split into their \
         needs before any run (`mcp_paraphrases_needs.jsonl`). complete@6 as one query: **{whole:.3}** at {tools} \
         tools ({small_whole:.3} at 950); one query per need, the top 6 of each: **{each6:.3}** ({small_each6:.3} \
         at 950); one query per need with as many results in all as one query (the top 3 of each of two, 2 of each \
         of three): {even:.3}.\n",
        splits.len()
    )
    .unwrap();

    // The everyday set with the scaled catalog as distractors.
    let day = host(runtime, copies.path(), true, "");
    let day_catalog = day.catalog();
    let day_rows = canonical_rows(&day_catalog, &everyday());
    let s = scored(&day, &day_catalog, &day_rows, true);
    writeln!(
        report,
        "The everyday set ({} requests over the bundled tools and the demo database) with the {tools} tools beside \
         them: recall@1 {:.3}, @6 {:.3}, MRR {:.3}.\n",
        day_rows.len(),
        s.recall[0],
        s.recall[2],
        s.mrr
    )
    .unwrap();

    // What a query costs at this size, the index built.
    let queries: Vec<&str> = rows.iter().map(|r| r.query.as_str()).collect();
    let _ = big.search_collapsed("warm the index", 5, None).unwrap();
    let mut times: Vec<f64> = Vec::new();
    for _ in 0..if options.smoke { 1 } else { 5 } {
        for query in &queries {
            let start = Instant::now();
            let hits = big.search_collapsed(query, 5, None).unwrap();
            times.push(start.elapsed().as_secs_f64() * 1e6);
            std::hint::black_box(hits);
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    let start = Instant::now();
    let fits = 20;
    for _ in 0..fits {
        std::hint::black_box(big.session(None).unwrap().system_prompt());
    }
    let prompt_ms = start.elapsed().as_secs_f64() * 1e3 / fits as f64;
    let start = Instant::now();
    for _ in 0..fits {
        quiver::disclosure::budget::forget();
        std::hint::black_box(big.session(None).unwrap().system_prompt());
    }
    let afresh_ms = start.elapsed().as_secs_f64() * 1e3 / fits as f64;
    writeln!(
        report,
        "One query at {tools} tools (the paraphrase requests, collapsed, top 5, one thread): p50 **{:.0} µs**, p99 \
         {:.0} µs. The Tier-1 text of a new session: {prompt_ms:.2} ms with the fit remembered, {afresh_ms:.2} ms \
         with it computed afresh (counted and folded without tiktoken's table).\n",
        at(0.5),
        at(0.99)
    )
    .unwrap();
}
