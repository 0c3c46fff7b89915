//! The report file: one block per section, each marked with the section's
//! name and when it was measured. A run with `--only` replaces its own
//! blocks in the file it writes and keeps the others as they were measured,
//! so `BENCHMARKS.md` is always exactly what the runner wrote: no note about
//! a partial re-run is ever typed in, and none is lost by the next run.

use std::fmt::Write as _;

/// One section's figures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Block {
    /// The section's `--only` name.
    pub(crate) name: String,
    /// When it was measured (`YYYY-MM-DD HH:MM UTC`).
    pub(crate) measured: String,
    /// What the section wrote.
    pub(crate) body: String,
}

/// Opens a block's marker line: `<!-- section NAME · DATE -->`.
const MARK: &str = "<!-- section ";

/// The blocks of a report the runner wrote earlier, in order (the header
/// before the first block is the runner's own and is written afresh).
pub(crate) fn parse(text: &str) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    for line in text.split_inclusive('\n') {
        let marker = line.trim_end().strip_prefix(MARK).and_then(|rest| rest.strip_suffix(" -->"));
        match (marker.and_then(|m| m.split_once(" · ")), blocks.last_mut()) {
            (Some((name, measured)), _) => {
                blocks.push(Block { name: name.to_owned(), measured: measured.to_owned(), body: String::new() })
            }
            (None, Some(block)) if line.trim_end() != stamp(&block.measured) => block.body.push_str(line),
            (None, _) => {}
        }
    }
    for block in &mut blocks {
        // The stamp is followed by a blank line of its own.
        block.body = format!("{}\n", block.body.replacen("\n\n\n", "\n\n", 1).trim());
    }
    blocks
}

/// The report: `header`, then each block with its marker and, under its
/// heading, the date it was measured.
pub(crate) fn render(header: &str, blocks: &[Block]) -> String {
    let mut out = String::from(header.trim_end());
    out.push_str("\n\n");
    for block in blocks {
        writeln!(out, "{MARK}{} · {} -->", block.name, block.measured).unwrap();
        let body = block.body.trim_end();
        match body.split_once('\n').filter(|(first, _)| first.starts_with("## ")) {
            Some((heading, rest)) => {
                writeln!(out, "{heading}\n\n{}\n\n{}\n", stamp(&block.measured), rest.trim_start()).unwrap()
            }
            None => writeln!(out, "{}\n\n{body}\n", stamp(&block.measured)).unwrap(),
        }
    }
    out
}

/// The visible line saying when a block was measured.
fn stamp(measured: &str) -> String {
    format!("*Measured {measured}.*")
}

/// Panics unless `text` reads back as itself: what a later `--only` run
/// keeps must be what this run wrote.
pub(crate) fn check_round_trip(text: &str, header: &str) {
    let again = render(header, &parse(text));
    assert!(again == text, "the report does not read back as written:\n{again}");
}

/// `fresh` blocks in `order`, each taken from `fresh` when this run measured
/// it, else from `earlier` (sections measured by neither are left out).
pub(crate) fn merge(order: &[&str], fresh: Vec<Block>, earlier: Vec<Block>) -> Vec<Block> {
    let mut merged = Vec::new();
    for name in order {
        let pick = |blocks: &Vec<Block>| blocks.iter().find(|b| b.name == *name).cloned();
        if let Some(block) = pick(&fresh).or_else(|| pick(&earlier)) {
            merged.push(block);
        }
    }
    merged
}
