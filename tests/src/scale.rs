//! The catalog at scale, for tests and benchmarks: the real MCP corpus
//! (`tests/data/corpus/mcp-tools`, 28 servers, 950 tools) copied `n` times,
//! each copy's servers renamed (`github-mcp-server`, then
//! `github-mcp-server-c2`, … `-c12`): at 12 copies, 336 servers and 11,400
//! tools. A needed tool counts as found when any copy of it is found, so
//! the paraphrase set scores the same way at any scale.

use std::collections::BTreeSet;
use std::path::Path;

use quiver::catalog::Catalog;

use crate::paraphrases::Paraphrase;

/// A folder holding `copies` copies of the MCP corpus, servers renamed.
pub fn corpus_copies(copies: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let source = crate::corpus("mcp-tools");
    for file in std::fs::read_dir(&source).unwrap() {
        let path = file.unwrap().path();
        let Some(stem) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        let tools = std::fs::read(&path).unwrap();
        let meta = std::fs::read(source.join(format!("{stem}.json.meta"))).ok();
        for copy in 1..=copies {
            let name = if copy == 1 { stem.to_owned() } else { format!("{stem}-c{copy}") };
            std::fs::write(dir.path().join(format!("{name}.json")), &tools).unwrap();
            if let Some(meta) = &meta {
                std::fs::write(dir.path().join(format!("{name}.json.meta")), meta).unwrap();
            }
        }
    }
    dir
}

/// The server a copy was made from: `github-mcp-server-c7` → `github-mcp-server`.
pub fn original(server: &str) -> &str {
    match server.rsplit_once("-c") {
        Some((base, copy)) if !copy.is_empty() && copy.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => server,
    }
}

/// What tool `name` is, whichever copy it is: its original server and its
/// action (`name` itself when `catalog` has no such tool).
pub fn canonical(catalog: &Catalog, name: &str) -> String {
    match catalog.tool(name) {
        Some(entry) => format!("{}/{}", original(&entry.origin), entry.action),
        None => name.to_owned(),
    }
}

/// `rows` with each expected tool named canonically (see [`canonical`]).
pub fn canonical_rows(catalog: &Catalog, rows: &[Paraphrase]) -> Vec<Paraphrase> {
    rows.iter()
        .map(|row| Paraphrase {
            query: row.query.clone(),
            lang: row.lang.clone(),
            expected: row
                .expected
                .iter()
                .map(|need| need.iter().map(|name| canonical(catalog, name)).collect())
                .collect(),
            known: row.known,
        })
        .collect()
}

/// The canonical names each hit stands for (itself and its equivalents).
pub fn canonical_hits(catalog: &Catalog, hits: Vec<(String, Vec<String>)>) -> Vec<BTreeSet<String>> {
    hits.into_iter()
        .map(|(name, equivalents)| {
            std::iter::once(name).chain(equivalents).map(|name| canonical(catalog, &name)).collect()
        })
        .collect()
}

/// How many servers and tool files a corpus folder holds.
pub fn servers_in(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|f| f.as_ref().unwrap().path().extension().is_some_and(|e| e == "json"))
        .count()
}
