//! Quiver built-in tool plugin: text statistics, case conversion, slugs,
//! diffs and regular expressions.

mod pattern;

use quiver_sdk::prelude::*;

pub use pattern::{Found, Match, RegexFind, RegexReplace, Replaced, compile, find_matches, replace};

/// Input of `stats`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stats {
    /// The text to measure.
    pub text: String,
}

/// Counts of a text.
#[derive(Serialize, JsonSchema)]
pub struct TextStats {
    /// Unicode scalar values (what most languages call characters).
    pub chars: usize,
    /// User-perceived characters (extended grapheme clusters): `é` or `👍🏽` count as one.
    pub graphemes: usize,
    /// Words by the Unicode word-boundary rules (punctuation and spaces are not words).
    pub words: usize,
    /// Lines; a final line break does not start a new line. 0 for empty text.
    pub lines: usize,
    /// Sentences by the Unicode sentence-boundary rules.
    pub sentences: usize,
    /// Size in UTF-8 bytes.
    pub bytes: usize,
}

/// A letter case or identifier style.
#[derive(Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Case {
    /// `hello_world`
    Snake,
    /// `hello-world`
    Kebab,
    /// `helloWorld`
    Camel,
    /// `HelloWorld`
    Pascal,
    /// `Hello World`
    Title,
    /// `Hello-World`
    Train,
    /// `HELLO_WORLD`
    ShoutySnake,
    /// `HELLO-WORLD`
    ShoutyKebab,
    /// `HELLO WORLD` (every character upper-cased, spacing kept)
    Upper,
    /// `hello world` (every character lower-cased, spacing kept)
    Lower,
}

/// Input of `change_case`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeCase {
    /// The text to convert, e.g. `userAccountID` or `Hello, world!`. Word boundaries are found
    /// at spaces, punctuation, `_`, `-` and lower-to-upper case changes.
    pub text: String,
    /// Target case. Except `upper` and `lower`, punctuation is dropped and words are rejoined.
    pub case: Case,
}

/// Converted text.
#[derive(Serialize, JsonSchema)]
pub struct Converted {
    /// The result.
    pub text: String,
}

/// Input of `slugify`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Slugify {
    /// The text to turn into a slug, e.g. `Ünïcödé & Friends!` gives `unicode-friends`.
    pub text: String,
}

/// Input of `diff`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Diff {
    /// The original text.
    pub old: String,
    /// The changed text.
    pub new: String,
    /// Unchanged lines shown around each change.
    #[serde(default = "defaults::context_lines")]
    #[schemars(range(max = 1000))]
    pub context_lines: u32,
    /// Label of the original text in the `---` header line.
    #[serde(default = "defaults::old_label")]
    pub old_label: String,
    /// Label of the changed text in the `+++` header line.
    #[serde(default = "defaults::new_label")]
    pub new_label: String,
}

/// A line diff of two texts.
#[derive(Serialize, JsonSchema)]
pub struct TextDiff {
    /// The unified diff (as `diff -u` prints it); empty when the texts are identical.
    pub unified: String,
    /// True when the texts are the same.
    pub identical: bool,
    /// Lines only in the changed text.
    pub lines_added: usize,
    /// Lines only in the original text.
    pub lines_removed: usize,
    /// Similarity of the two texts from 0 (nothing shared) to 1 (identical), by line.
    pub similarity: f32,
}

/// Default values of optional input fields (they also appear in the schemas).
mod defaults {
    pub fn context_lines() -> u32 {
        3
    }
    pub fn old_label() -> String {
        "old".to_owned()
    }
    pub fn new_label() -> String {
        "new".to_owned()
    }
}

/// Convert `text` to `case` with `heck` (or the standard library for upper/lower).
pub fn convert_case(text: &str, case: Case) -> String {
    use heck::{
        ToKebabCase, ToLowerCamelCase, ToShoutyKebabCase, ToShoutySnakeCase, ToSnakeCase, ToTitleCase, ToTrainCase,
        ToUpperCamelCase,
    };
    match case {
        Case::Snake => text.to_snake_case(),
        Case::Kebab => text.to_kebab_case(),
        Case::Camel => text.to_lower_camel_case(),
        Case::Pascal => text.to_upper_camel_case(),
        Case::Title => text.to_title_case(),
        Case::Train => text.to_train_case(),
        Case::ShoutySnake => text.to_shouty_snake_case(),
        Case::ShoutyKebab => text.to_shouty_kebab_case(),
        Case::Upper => text.to_uppercase(),
        Case::Lower => text.to_lowercase(),
    }
}

/// Count the characters, graphemes, words, lines, sentences and bytes of `text`.
pub fn text_stats(text: &str) -> TextStats {
    use unicode_segmentation::UnicodeSegmentation;
    TextStats {
        chars: text.chars().count(),
        graphemes: text.graphemes(true).count(),
        words: text.unicode_words().count(),
        lines: text.lines().count(),
        sentences: count_sentences(text),
        bytes: text.len(),
    }
}

/// Sentences by UAX #29, ignoring whitespace-only pieces.
///
/// A plain loop on purpose: `USentenceBounds::size_hint` in unicode-segmentation 1.13.3
/// computes `lower - 1` on a lower bound of 0, which panics in debug builds and wraps to
/// `usize::MAX` in release, so adapters that consult the size hint must be avoided.
fn count_sentences(text: &str) -> usize {
    use unicode_segmentation::UnicodeSegmentation;
    let mut n = 0;
    for sentence in text.unicode_sentences() {
        if !sentence.trim().is_empty() {
            n += 1;
        }
    }
    n
}

/// Text statistics, case conversion, slugs, line diffs, and regex search and replace.
#[quiver_sdk::plugin(categories = ["text"])]
mod text {
    use super::*;

    /// Count the characters, graphemes, words, lines, sentences and bytes of a text.
    pub fn stats(input: Stats) -> TextStats {
        text_stats(&input.text)
    }

    /// Convert text to snake_case, kebab-case, camelCase, PascalCase, Title Case, UPPER or lower.
    pub fn change_case(input: ChangeCase) -> Converted {
        Converted { text: convert_case(&input.text, input.case) }
    }

    /// Make a URL slug: ASCII lower-case words joined by `-` (accents transliterated).
    pub fn slugify(input: Slugify) -> Converted {
        Converted { text: slug::slugify(&input.text) }
    }

    /// Compare two texts line by line and return a unified diff.
    pub fn diff(input: Diff) -> TextDiff {
        let diff = similar::TextDiff::from_lines(&input.old, &input.new);
        let (mut added, mut removed) = (0, 0);
        for change in diff.iter_all_changes() {
            match change.tag() {
                similar::ChangeTag::Insert => added += 1,
                similar::ChangeTag::Delete => removed += 1,
                similar::ChangeTag::Equal => {}
            }
        }
        let unified = diff
            .unified_diff()
            .context_radius(input.context_lines.min(1000) as usize)
            .header(&input.old_label, &input.new_label)
            .to_string();
        TextDiff {
            unified,
            identical: input.old == input.new,
            lines_added: added,
            lines_removed: removed,
            similarity: diff.ratio(),
        }
    }

    /// Find the matches of a regular expression in a text, with positions and capture groups.
    pub fn regex_find(input: RegexFind) -> Result<Found, ToolError> {
        let re = compile(&input.pattern, input.case_insensitive, input.multi_line)?;
        let max = input.max_matches.clamp(1, 10_000) as usize;
        Ok(find_matches(&re, &input.text, input.captures, max))
    }

    /// Replace the matches of a regular expression, with `$1`/`${name}` references to groups.
    pub fn regex_replace(input: RegexReplace) -> Result<Replaced, ToolError> {
        let re = compile(&input.pattern, input.case_insensitive, input.multi_line)?;
        let limit = match input.limit {
            Some(0) => {
                return Err(ToolError::invalid_input("limit must be at least 1 (omit it to replace all)"));
            }
            l => l.map(|l| l as usize),
        };
        let (text, replacements) = replace(&re, &input.text, &input.replacement, limit, input.literal);
        Ok(Replaced { text, replacements })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_count_graphemes_and_lines() {
        let s = text_stats("Héllo wörld. 👍🏽 Bye!\nSecond line.\n");
        assert_eq!(s.lines, 2);
        assert_eq!(s.words, 5);
        assert_eq!(s.sentences, 3);
        assert_eq!(s.graphemes, s.chars - 1);
        assert_eq!(text_stats("").lines, 0);
    }

    #[test]
    fn cases() {
        assert_eq!(convert_case("userAccountID", Case::Snake), "user_account_id");
        assert_eq!(convert_case("hello world", Case::Pascal), "HelloWorld");
        assert_eq!(convert_case("hello world", Case::ShoutySnake), "HELLO_WORLD");
    }
}
