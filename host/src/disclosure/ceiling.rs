//! An upper bound on a text's o200k tokens that loads no tokenizer table.
//!
//! Counting with tiktoken first builds its 200,000-entry table (about
//! 180 ms and 50 MB), which a prompt well within its budget never needs.
//! The bound splits the text exactly as tiktoken does (its own pattern),
//! then charges each piece found whole in o200k's vocabulary one token —
//! which is what tiktoken gives it, as it looks the whole piece up before
//! merging — and any other piece its bytes (a token is at least a byte).
//! The vocabulary is an `fst` set the build script writes from tiktoken's
//! table and the binary embeds, read in place.

use std::sync::LazyLock;

/// o200k_base's ordinary tokens, as the build script wrote them.
static VOCABULARY: LazyLock<fst::Set<&'static [u8]>> = LazyLock::new(|| {
    fst::Set::new(&include_bytes!(concat!(env!("OUT_DIR"), "/o200k_vocab.fst"))[..])
        .expect("the build script writes a valid set")
});

/// tiktoken's pre-tokenizer for o200k_base.
static PIECES: LazyLock<fancy_regex::Regex> = LazyLock::new(|| {
    fancy_regex::Regex::new(tiktoken_rs::O200K_BASE_PAT_STR).expect("tiktoken's own pattern compiles")
});

/// At least as many tokens as `text` has in o200k_base (exactly as many
/// when every piece is one token, as most English words and JSON
/// punctuation are).
pub fn o200k_ceiling(text: &str) -> usize {
    let mut tokens = 0;
    for piece in PIECES.find_iter(text) {
        // The pattern cannot fail on text (it has no backreferences); if
        // it ever did, bytes bound the whole text.
        let Ok(piece) = piece else { return text.len() };
        let piece = piece.as_str();
        tokens += if VOCABULARY.contains(piece) { 1 } else { piece.len() };
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::o200k_ceiling;
    use crate::disclosure::tokens::Cost;

    /// The bound is never below the count, and close on English and JSON.
    #[test]
    fn the_ceiling_bounds_the_count() {
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
            let (ceiling, count) = (o200k_ceiling(text), Cost::o200k_of(text));
            assert!(ceiling >= count, "{text:?}: ceiling {ceiling} < count {count}");
            assert!(ceiling <= text.len().max(count), "{text:?}: ceiling {ceiling} above its bytes");
        }
        for long in
            [format!("{}x", " ".repeat(200_000)), "'".repeat(300_000), format!("a{}", "\u{300}".repeat(100_000))]
        {
            let ceiling = o200k_ceiling(&long);
            let count = Cost::o200k_of(&long);
            assert!(ceiling >= count, "ceiling {ceiling} < count {count}");
        }
        let prose = "Evaluate an arithmetic expression and return the result as a number.";
        assert_eq!(o200k_ceiling(prose), Cost::o200k_of(prose), "every word is one token");
    }
}
