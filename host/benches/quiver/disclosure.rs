//! Prompt tokens per disclosure mode, and retrieval quality.

use std::fmt::Write as _;

use quiver::Host;
use quiver::catalog::ToolRecord;
use quiver::disclosure::formats::ToolDef;
use std::sync::Arc;

use quiver::disclosure::search::analyzer::Analyzer;
use quiver::disclosure::search::model::StaticModel;
use quiver::disclosure::search::{Arm, SearchIndex};
use quiver::disclosure::select::{RankSelector, Selector};
use quiver::disclosure::tokens::{Cost, TokenReport};
use quiver_tests::bfcl::{RANKED, bfcl, recall, top10};
use quiver_tests::corpus;
use quiver_tests::paraphrases::{paraphrases, score};

fn pct(part: usize, whole: usize) -> String {
    if whole == 0 { "—".into() } else { format!("{:.2}%", 100.0 * (1.0 - part as f64 / whole as f64)) }
}

fn table(report: &mut String, tokens: &TokenReport) {
    writeln!(
        report,
        "| resource | tools | full o200k | progressive o200k | names o200k | full cl100k | progressive cl100k | saved (o200k) |"
    )
    .unwrap();
    writeln!(report, "|---|---:|---:|---:|---:|---:|---:|---:|").unwrap();
    for row in &tokens.rows {
        writeln!(
            report,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            row.name,
            row.tools,
            row.full.o200k,
            row.progressive.o200k,
            row.names.o200k,
            row.full.cl100k,
            row.progressive.cl100k,
            pct(row.progressive.o200k, row.full.o200k)
        )
        .unwrap();
    }
    for (meta_tool, cost) in &tokens.overhead {
        writeln!(report, "| `{meta_tool}` text and schema | | | {} | | | {} | |", cost.o200k, cost.cl100k).unwrap();
    }
    let tools: usize = tokens.rows.iter().map(|r| r.tools).sum();
    writeln!(
        report,
        "| **total** | **{tools}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** |\n",
        tokens.full.o200k,
        tokens.progressive.o200k,
        tokens.names.o200k,
        tokens.full.cl100k,
        tokens.progressive.cl100k,
        pct(tokens.progressive.o200k, tokens.full.o200k)
    )
    .unwrap();
}

/// Token cost of the real MCP corpus and of the bundled plugins, per mode.
pub(crate) fn tokens(runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Prompt tokens\n").unwrap();
    writeln!(
        report,
        "Counted with tiktoken (`o200k_base`, `cl100k_base`) on the compact JSON of each definition (name, \
         description, input schema) as sent to a model. *Full*: every tool flat with its schema (`legacy`). \
         *Progressive*: the Tier-1 stub inside the meta-tool (`mcp`, `request_tools`...), plus each \
         meta-tool's fixed text and schema (own rows); the total is every offered meta-tool definition and \
         the MCP `instructions` sent beside them. *Names*: the names only (REST level 1). Regenerate the per-server view with \
         `quiver --no-bundled tokens --corpus tests/data/corpus/mcp-tools`.\n"
    )
    .unwrap();

    let host = Host::builder().mcp_dir(corpus("mcp-tools")).cache_dir(None).build().unwrap();
    let tokens = runtime.block_on(host.token_report(None)).unwrap();
    writeln!(report, "### The real-tool corpus (`tests/data/corpus/mcp-tools`: 28 servers, 950 tools)\n").unwrap();
    table(report, &tokens);

    // What a discover → execute round trip costs, to see the break-even.
    let catalog = host.catalog();
    let mut per_tool: Vec<usize> = catalog
        .tools()
        .iter()
        .filter_map(|entry| catalog.record(entry))
        .filter_map(|record| ToolDef::of(&record))
        .map(|d| Cost::of_def(&d).o200k)
        .collect();
    per_tool.sort();
    let median_tool = per_tool[per_tool.len() / 2];
    let mut per_server: Vec<usize> = tokens.rows.iter().map(|r| r.full.o200k).collect();
    per_server.sort();
    let median_server = per_server[per_server.len() / 2];
    let saved = tokens.full.o200k.saturating_sub(tokens.progressive.o200k);
    writeln!(
        report,
        "Round trip: `mcp discover` of one tool returns its definition, median **{median_tool}** tokens \
         (o200k) over the 950 tools; discovering a whole server returns median **{median_server}** tokens \
         over the 28 servers. The call that follows costs what a flat call costs. Progressive stays cheaper \
         than full schemas until about **{}** single-tool discoveries (or **{}** whole-server ones) in one \
         conversation.\n",
        saved / median_tool.max(1),
        saved / median_server.max(1)
    )
    .unwrap();

    let bundled = Host::builder().bundled().cache_dir(None).build().unwrap();
    let cold = search_answers(runtime, &bundled);
    let tokens = runtime.block_on(bundled.token_report(None)).unwrap();
    writeln!(report, "### The bundled plugins (19 built-in tools; `request_tools` lists them all)\n").unwrap();
    table(report, &tokens);

    // What one `search_tools` answer costs at each level (the plugins of
    // the hits loaded, as `token_report` left them: the summary level
    // then carries each hit's argument signature).
    let warm = search_answers(runtime, &bundled);
    writeln!(
        report,
        "One `search_tools` answer (5 hits; median over {} queries), o200k tokens: `names` **{}**, `summary` \
         **{}** with each hit's argument signature (`codec__hash(data: string, algorithm: \"sha256\"|…, \
         hmac_key?: string|null, …)`; the plugins of the hits loaded) or **{}** before a plugin is loaded \
         (a pointer to `full` instead), `full` **{}**.\n",
        QUERIES.len(),
        warm[0],
        warm[1],
        cold[1],
        warm[2]
    )
    .unwrap();
}

/// Queries a user might start from, for the cost of a search answer.
const QUERIES: [&str; 6] = [
    "hash a string with sha256",
    "what time is it in Tokyo",
    "pretty print this json",
    "render a jinja template",
    "count the words in a text",
    "turn a title into a url slug",
];

/// The median tokens (o200k) of a `search_tools` answer over [`QUERIES`]
/// at each detail level: names, summary, full.
fn search_answers(runtime: &tokio::runtime::Runtime, host: &Host) -> [usize; 3] {
    ["names", "summary", "full"].map(|detail| {
        let mut costs: Vec<usize> = QUERIES
            .iter()
            .map(|query| {
                let mut session = host.session(None).unwrap();
                let args = serde_json::json!({ "query": query, "detail": detail, "limit": 5 });
                let outcome = runtime.block_on(session.call("search_tools", args));
                assert!(!outcome.is_error, "{}", outcome.text);
                Cost::of(&outcome.text).o200k
            })
            .collect();
        costs.sort();
        costs[costs.len() / 2]
    })
}

const ARMS: [(Arm, &str); 4] = [
    (Arm::Lexical, "BM25 alone"),
    (Arm::Semantic, "embeddings alone"),
    (Arm::Fused, "hybrid (RRF)"),
    (Arm::Feedback, "hybrid + feedback, the default"),
];

/// Recall@k of each ranking arm and of the built-in selector on BFCL and on
/// the paraphrase set, and the hybrid ranker's cost at 10,000 tools.
pub(crate) fn retrieval(options: &crate::Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    let rss_before_model = crate::rss_bytes();
    let model = StaticModel::bundled().expect("the bench is built with the bundled model");
    let model_bytes = crate::rss_bytes().saturating_sub(rss_before_model);
    let analyzer = Arc::new(Analyzer::new(Some(model.clone()), None));
    writeln!(report, "## Retrieval quality\n").unwrap();
    writeln!(
        report,
        "BFCL `live_multiple.jsonl` (1,053 real user queries, one expected tool each); the tools of all \
         rows pooled into one catalog, so each query must find its tool among all of them. Recall counts \
         distinct names: BFCL words some tools several ways (159 of its 457 names have 2 to 16 \
         descriptions), the pool keeps each wording as a record, and a name ranked again is the same tool \
         found again (a catalog holds one tool per name); the line under the table counts per record. Arms: BM25 (the `bm25` crate's tokenizer, our own index) over names (split into words), \
         descriptions and parameters; embeddings alone (the bundled static table `{}`: mean of token rows, \
         cosine); the hybrid fuses both by reciprocal rank (k = 60, one vote each); feedback first moves \
         the query's vector halfway toward the mean vector of BM25's top 3 (Rocchio pseudo-relevance \
         feedback). The `+ MCP` rows add the 950 tools of the MCP corpus as distractors. The built-in selector ranks a session's resident tools the same way through the \
         `Selector` trait. The test `bfcl_live_multiple_pooled_recall_holds_its_floors` holds the floors.\n",
        model.id()
    )
    .unwrap();
    writeln!(report, "| ranker | pool | recall@1 | recall@3 | recall@6 | recall@10 | MRR |").unwrap();
    writeln!(report, "|---|---:|---:|---:|---:|---:|---:|").unwrap();
    let (mut queries, tools) = bfcl("live_multiple.jsonl");
    if options.smoke {
        queries.truncate(20);
    }
    let mut row = |ranker: &str, pool: usize, ([r1, r3, r6, r10], mrr): ([f64; 4], f64)| {
        writeln!(report, "| {ranker} | {pool} | {r1:.3} | {r3:.3} | {r6:.3} | {r10:.3} | {mrr:.3} |").unwrap();
    };
    let corpus_host = Host::builder().mcp_dir(corpus("mcp-tools")).cache_dir(None).build().unwrap();
    let corpus = corpus_host.catalog();
    let mut with_distractors = tools.clone();
    with_distractors.extend(corpus.tools().iter().filter_map(|entry| corpus.record(entry)));
    let index = SearchIndex::for_records(&tools, &analyzer);
    let pooled = SearchIndex::for_records(&with_distractors, &analyzer);
    for (arm, name) in ARMS {
        row(name, tools.len(), recall(&queries, |q| top10(&index, arm, q)));
    }
    for (arm, name) in ARMS {
        row(&format!("{name} + MCP"), with_distractors.len(), recall(&queries, |q| top10(&pooled, arm, q)));
    }
    let selector = RankSelector { analyzer: analyzer.clone() };
    row("built-in selector (hybrid)", tools.len(), selector_recall(runtime, &selector, &tools, &queries));
    let per_record = |index: &SearchIndex| {
        let found =
            queries.iter().filter(|(q, want)| index.search(q, 6, |_| true).iter().any(|(e, _)| &e.name == want));
        found.count() as f64 / queries.len() as f64
    };
    writeln!(
        report,
        "\nCounted per record (each wording of a name taking a place of its own), the default's recall@6 is {:.3} \
         ({:.3} + MCP).\n",
        per_record(&index),
        per_record(&pooled)
    )
    .unwrap();

    let paraphrase_rows = paraphrases();
    writeln!(
        report,
        "The paraphrase set (`tests/data/retrieval/mcp_paraphrases.jsonl`): {} requests over the 950 MCP tools, \
         written from the tools' names only, never their descriptions, so they do not reuse the descriptions' \
         words; {} not in English, {} needing two or three tools; {} needs in all, each met by any of its \
         alternatives where servers overlap. Need recall@k: needs met within the top k; complete@6: requests \
         whose every need is in the top 6. The test `mcp_paraphrases_name_real_tools_and_search_finds_them` \
         holds the floors (through `Host::search`, the hybrid).\n",
        paraphrase_rows.len(),
        paraphrase_rows.iter().filter(|r| r.lang != "en").count(),
        paraphrase_rows.iter().filter(|r| r.expected.len() > 1).count(),
        paraphrase_rows.iter().map(|r| r.expected.len()).sum::<usize>(),
    )
    .unwrap();
    writeln!(report, "| ranker | need recall@1 | @3 | @6 | @10 | MRR | complete@6 | need recall@6, not in English |")
        .unwrap();
    writeln!(report, "|---|---:|---:|---:|---:|---:|---:|---:|").unwrap();
    let index = SearchIndex::for_catalog(&corpus, &analyzer);
    for (arm, name) in ARMS {
        let scores = score(&paraphrase_rows, |q| top10(&index, arm, q));
        let [r1, r3, r6, r10] = scores.recall;
        writeln!(
            report,
            "| {name} | {r1:.3} | {r3:.3} | {r6:.3} | {r10:.3} | {:.3} | {:.3} | {:.3} |",
            scores.mrr, scores.complete_at_6, scores.other_languages_at_6
        )
        .unwrap();
    }
    writeln!(report).unwrap();
    everyday(runtime, &analyzer, report);
    ranker_cost(options, &model, model_bytes, &with_distractors, &queries, report);
}

/// The everyday set over the bundled tools and the demo database, with
/// resources indexed as search indexes a host's catalog.
fn everyday(runtime: &tokio::runtime::Runtime, analyzer: &Arc<Analyzer>, report: &mut String) {
    let rows = quiver_tests::paraphrases::everyday();
    let _guard = runtime.enter();
    let host = Host::builder().bundled().demo_databases().cache_dir(None).build().unwrap();
    let catalog = host.catalog();
    writeln!(
        report,
        "The everyday set (`tests/data/retrieval/everyday.jsonl`): {} requests in everyday words over the bundled \
         tools and the demo database (`chinook`, found as a resource: its description and table names), {} of \
         them reported ranked wrong before the set was written. The test \
         `everyday_requests_find_the_bundled_tools_and_the_database` holds the floors.\n",
        rows.len(),
        rows.iter().filter(|r| r.known).count(),
    )
    .unwrap();
    writeln!(report, "| ranker | recall@1 | @3 | @6 | @10 | MRR |").unwrap();
    writeln!(report, "|---|---:|---:|---:|---:|---:|").unwrap();
    let index = SearchIndex::for_catalog(&catalog, analyzer);
    for (arm, name) in ARMS {
        let scores = score(&rows, |q| top10(&index, arm, q));
        let [r1, r3, r6, r10] = scores.recall;
        writeln!(report, "| {name} | {r1:.3} | {r3:.3} | {r6:.3} | {r10:.3} | {:.3} |", scores.mrr).unwrap();
    }
    writeln!(report).unwrap();
}

/// Index build (cold and from the disk cache) and query latency of the
/// hybrid ranker over 10,000 tools, and its memory.
fn ranker_cost(
    options: &crate::Options,
    model: &Arc<StaticModel>,
    model_bytes: usize,
    tools: &[ToolRecord],
    queries: &[(String, String)],
    report: &mut String,
) {
    const TOOLS: usize = 10_000;
    // 10,000 distinct tools: the real ones, then copies whose names and
    // descriptions differ (so each is its own text to embed).
    let many: Vec<ToolRecord> = (0..TOOLS)
        .map(|i| {
            let mut tool = tools[i % tools.len()].clone();
            if i >= tools.len() {
                let copy = i / tools.len();
                tool.name = format!("{}_{copy}", tool.name);
                tool.action = format!("{}_{copy}", tool.action);
                tool.description = format!("{} (copy {copy})", tool.description);
            }
            tool
        })
        .collect();
    let cache = tempfile::tempdir().unwrap();
    let cold = Arc::new(Analyzer::new(Some(model.clone()), Some(cache.path())));
    let (_, cold_build) = crate::time(|| SearchIndex::for_records(&many, &cold));
    drop(cold);
    let bm25 = Arc::new(Analyzer::bm25());
    let (lexical, bm25_build) = crate::time(|| SearchIndex::for_records(&many, &bm25));
    let (_, bm25_rebuild) = crate::time(|| SearchIndex::for_records(&many, &bm25));
    let rss_before = crate::rss_bytes();
    let warm = Arc::new(Analyzer::new(Some(model.clone()), Some(cache.path())));
    let (index, cached_build) = crate::time(|| SearchIndex::for_records(&many, &warm));
    assert_eq!(warm.computed(), (0, 0));
    let (_, rebuild) = crate::time(|| SearchIndex::for_records(&many, &warm));
    let index_bytes = crate::rss_bytes().saturating_sub(rss_before);
    let reps = options.reps(queries.len());
    let timings = |index: &SearchIndex, arm: Arm| {
        crate::Stats::new(
            queries
                .iter()
                .cycle()
                .take(reps)
                .map(|(q, _)| crate::time(|| index.search_with(arm, q, 10, |_| true)).1)
                .collect(),
        )
    };
    let hybrid = timings(&index, Arm::Feedback);
    let bm25 = timings(&lexical, Arm::Lexical);
    let embed =
        crate::Stats::new(queries.iter().cycle().take(reps).map(|(q, _)| crate::time(|| model.embed(q)).1).collect());
    let vectors_mb = (TOOLS * model.dim() * 4) as f64 / 1e6;
    writeln!(
        report,
        "Cost at {TOOLS} tools (the BFCL and MCP tools, then renamed copies), {reps} BFCL queries, one thread:\n"
    )
    .unwrap();
    writeln!(report, "| | p50 (µs) | p99 (µs) |").unwrap();
    writeln!(report, "|---|---:|---:|").unwrap();
    writeln!(report, "| query embedding alone | {} | {} |", crate::us(embed.median()), crate::us(embed.pct(0.99)))
        .unwrap();
    writeln!(
        report,
        "| hybrid search, the default (embed, BM25, feedback, cosine over all, fusion) | {} | {} |",
        crate::us(hybrid.median()),
        crate::us(hybrid.pct(0.99))
    )
    .unwrap();
    writeln!(report, "| BM25 search alone | {} | {} |\n", crate::us(bm25.median()), crate::us(bm25.pct(0.99))).unwrap();
    writeln!(
        report,
        "Index build for {TOOLS} tools (2 cores): hybrid cold (every tool tokenized and embedded) {} ms; \
         hybrid from the disk cache (a restart) {} ms; hybrid again in the same process (a reload: every \
         text remembered) {} ms; BM25 alone cold {} ms, again {} ms. Resident memory: loading the model \
         (int8 table read in place, tokenizer) {:.1} MB, once per process; the hybrid index of {TOOLS} tools \
         with what the analyzer remembers of them (vectors: {vectors_mb:.1} MB of f32, kept by both; terms; \
         postings) {:.1} MB.\n",
        crate::ms(cold_build),
        crate::ms(cached_build),
        crate::ms(rebuild),
        crate::ms(bm25_build),
        crate::ms(bm25_rebuild),
        model_bytes as f64 / 1e6,
        index_bytes as f64 / 1e6,
    )
    .unwrap();
}

fn selector_recall(
    runtime: &tokio::runtime::Runtime,
    selector: &RankSelector,
    tools: &[ToolRecord],
    queries: &[(String, String)],
) -> ([f64; 4], f64) {
    recall(queries, |query| runtime.block_on(selector.select(query, tools, RANKED)).unwrap())
}
