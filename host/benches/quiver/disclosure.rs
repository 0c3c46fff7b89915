//! Prompt tokens per disclosure mode, and retrieval quality.

use std::fmt::Write as _;

use quiver::Host;
use quiver::catalog::ToolRecord;
use quiver::disclosure::formats::ToolDef;
use quiver::disclosure::search::SearchIndex;
use quiver::disclosure::select::{Bm25Selector, Selector};
use quiver::disclosure::tokens::{Cost, TokenReport};
use quiver_tests::bfcl::{bfcl, recall};
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

/// Recall@k of `search_tools` and of the built-in selector on BFCL.
pub(crate) fn retrieval(options: &crate::Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Retrieval quality\n").unwrap();
    writeln!(
        report,
        "BFCL `live_multiple.jsonl` (1,053 real user queries, one expected tool each); the tools of all \
         rows pooled into one catalog, so each query must find its tool among all of them. BM25 (the \
         `bm25` crate) over names (split into words), descriptions and parameter names, descriptions and \
         values. The second row adds the 950 tools of the MCP corpus as distractors. The built-in selector \
         ranks with the same index through the `Selector` trait, as a session does for its resident tools. \
         The test `bfcl_live_multiple_pooled_recall_at_6_holds_its_floor` asserts recall@6 ≥ 0.89.\n"
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
    let index = SearchIndex::for_records(&tools);
    row("`search_tools`", tools.len(), recall(&index, &queries));
    row("built-in selector (BM25)", tools.len(), selector_recall(runtime, &tools, &queries));

    let corpus_host = Host::builder().mcp_dir(corpus("mcp-tools")).cache_dir(None).build().unwrap();
    let paraphrase_rows = paraphrases();
    let mut with_distractors = tools.clone();
    let corpus = corpus_host.catalog();
    with_distractors.extend(corpus.tools().iter().filter_map(|entry| corpus.record(entry)));
    let index = SearchIndex::for_records(&with_distractors);
    row("`search_tools` + MCP distractors", with_distractors.len(), recall(&index, &queries));
    writeln!(report).unwrap();

    writeln!(
        report,
        "The paraphrase set (`tests/data/retrieval/mcp_paraphrases.jsonl`): {} requests over the 950 MCP tools, \
         written from the tools' names only, never their descriptions, so they do not reuse the descriptions' \
         words; {} not in English, {} needing two or three tools; {} needs in all, each met by any of its \
         alternatives where servers overlap. Need recall@k: needs met within the top k; complete@6: requests \
         whose every need is in the top 6. The test `mcp_paraphrases_name_real_tools_and_search_finds_them` \
         holds the floors.\n",
        paraphrase_rows.len(),
        paraphrase_rows.iter().filter(|r| r.lang != "en").count(),
        paraphrase_rows.iter().filter(|r| r.expected.len() > 1).count(),
        paraphrase_rows.iter().map(|r| r.expected.len()).sum::<usize>(),
    )
    .unwrap();
    writeln!(report, "| ranker | need recall@1 | @3 | @6 | @10 | MRR | complete@6 | need recall@6, not in English |")
        .unwrap();
    writeln!(report, "|---|---:|---:|---:|---:|---:|---:|---:|").unwrap();
    let scores = score(&paraphrase_rows, |query| {
        corpus_host.search(query, 10, None).unwrap().into_iter().map(|hit| hit.0).collect()
    });
    let [r1, r3, r6, r10] = scores.recall;
    writeln!(
        report,
        "| `search_tools` (BM25) | {r1:.3} | {r3:.3} | {r6:.3} | {r10:.3} | {:.3} | {:.3} | {:.3} |\n",
        scores.mrr, scores.complete_at_6, scores.other_languages_at_6
    )
    .unwrap();
}

fn selector_recall(
    runtime: &tokio::runtime::Runtime,
    tools: &[ToolRecord],
    queries: &[(String, String)],
) -> ([f64; 4], f64) {
    let mut hits = [0usize; 4];
    let mut mrr = 0.0;
    for (query, expected) in queries {
        let picked = runtime.block_on(Bm25Selector.select(query, tools, 10)).unwrap();
        if let Some(rank) = picked.iter().position(|n| n == expected) {
            mrr += 1.0 / (rank + 1) as f64;
            for (i, k) in [1, 3, 6, 10].into_iter().enumerate() {
                hits[i] += usize::from(rank < k);
            }
        }
    }
    let n = queries.len() as f64;
    (hits.map(|h| h as f64 / n), mrr / n)
}
