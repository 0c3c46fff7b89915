//! A text's o200k tokens counted without tiktoken's table.
//!
//! Counting with tiktoken first builds its 200,000-entry table (about
//! 180 ms and 50 MB). Here the vocabulary is an `fst` map (token bytes →
//! rank) the build script writes from that table and the binary embeds,
//! read in place. The text is split exactly as tiktoken splits it (its own
//! pattern); a piece that is a token is one; any other piece is merged by
//! byte-pair ranks as tiktoken merges pieces under 100 bytes (the lowest
//! rank first, the leftmost of equals), giving tiktoken's count. A piece
//! of 100 bytes or more (tiktoken merges those another way, which may
//! break ties differently) is charged its bytes: a token is at least a
//! byte, so the result is never below the count.

use std::sync::LazyLock;

/// o200k_base's ordinary tokens and their ranks, as the build script wrote them.
static VOCABULARY: LazyLock<fst::Map<&'static [u8]>> = LazyLock::new(|| {
    fst::Map::new(&include_bytes!(concat!(env!("OUT_DIR"), "/o200k_vocab.fst"))[..])
        .expect("the build script writes a valid map")
});

/// tiktoken's pre-tokenizer for o200k_base.
static PIECES: LazyLock<fancy_regex::Regex> = LazyLock::new(|| {
    fancy_regex::Regex::new(tiktoken_rs::O200K_BASE_PAT_STR).expect("tiktoken's own pattern compiles")
});

/// Pieces from this many bytes are charged their bytes, not merged.
const MERGED_BELOW: usize = 100;

/// The tokens of `text` in o200k_base: tiktoken's count, except that a
/// piece of 100 bytes or more is charged its bytes (so never below it).
pub fn count(text: &str) -> usize {
    let mut tokens = 0;
    for piece in PIECES.find_iter(text) {
        // The pattern cannot fail on text (it has no backreferences); if
        // it ever did, bytes bound the whole text.
        let Ok(piece) = piece else { return text.len() };
        tokens += piece_tokens(piece.as_str().as_bytes());
    }
    tokens
}

/// The tokens of one piece.
fn piece_tokens(piece: &[u8]) -> usize {
    if VOCABULARY.contains_key(piece) {
        return 1;
    }
    if piece.len() >= MERGED_BELOW {
        return piece.len();
    }
    merged(piece)
}

/// How many tokens byte-pair merging leaves of `piece` (at least two
/// bytes, not itself a token): the pair of adjacent parts whose joined
/// bytes have the lowest rank is joined first, the leftmost of equals,
/// until no adjacent pair is a token.
fn merged(piece: &[u8]) -> usize {
    let rank = |bytes: &[u8]| VOCABULARY.get(bytes).unwrap_or(u64::MAX);
    // Where each part starts; the last entry is the end of the piece.
    let mut starts: Vec<usize> = (0..=piece.len()).collect();
    loop {
        let best = (0..starts.len().saturating_sub(2))
            .map(|i| (rank(&piece[starts[i]..starts[i + 2]]), i))
            .min_by_key(|&(rank, i)| (rank, i));
        match best {
            Some((rank, i)) if rank != u64::MAX => {
                starts.remove(i + 1);
            }
            _ => return starts.len() - 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::count;
    use crate::disclosure::tokens::Cost;

    /// The count is tiktoken's (never below it for a piece of 100 bytes or
    /// more, which is charged its bytes).
    #[test]
    fn the_count_is_tiktokens() {
        let texts = [
            "",
            "Evaluate an arithmetic expression.",
            r#"{"name":"calc__eval","description":"Evaluate","inputSchema":{"type":"object"}}"#,
            "naïve café — 東京 😀 \u{0}\r\n\t  tail   ",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "12345678901234567890 3.14159 0x7fffffff",
            "it's we'll THEY'RE don't\n\n\n",
        ];
        for text in texts {
            assert_eq!(count(text), Cost::o200k_of(text), "{text:?}");
        }
        for long in
            [format!("{}x", " ".repeat(200_000)), "'".repeat(300_000), format!("a{}", "\u{300}".repeat(100_000))]
        {
            let (ours, tiktoken) = (count(&long), Cost::o200k_of(&long));
            assert!(ours >= tiktoken, "{ours} < tiktoken's {tiktoken}");
        }
        let prose = "Evaluate an arithmetic expression and return the result as a number.";
        assert_eq!(count(prose), Cost::o200k_of(prose), "every word is one token");
    }

    /// Every real tool list of the MCP corpus (28 servers, 950 tools, as
    /// JSON) counts the same as tiktoken counts it.
    #[test]
    fn the_count_is_tiktokens_on_real_tool_lists() {
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/corpus/mcp-tools");
        let mut files = 0;
        for file in std::fs::read_dir(corpus).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                assert_eq!(count(&text), Cost::o200k_of(&text), "{}", path.display());
                files += 1;
            }
        }
        assert!(files >= 28, "{files} tool lists");
    }
}
