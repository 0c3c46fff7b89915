//! The lexical arm: BM25 over names, descriptions and parameters.
//!
//! Words come from the `bm25` crate's English tokenizer (Unicode
//! normalisation, stop words, Snowball stemming), after identifiers are
//! split, so `getWeatherForecast`, `get_weather_forecast` and "weather
//! forecast" meet. Scoring is Okapi BM25 (k1 = 1.2, b = 0.75, the crate's
//! formulas) over an inverted index kept here: the crate's own engine
//! clones every matching document per query and tokenizes each document
//! twice to build, 20 ms per query and 0.6 s per build at 10,000 tools.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use bm25::{DefaultTokenizer, Language, Tokenizer};

use super::store::Record;

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// A document's words: its length in words and each distinct word's count.
#[derive(Debug, Clone, PartialEq)]
pub struct Terms {
    length: u32,
    counts: Vec<(Box<str>, u32)>,
}

impl Terms {
    /// The terms of `text`.
    pub fn of(tokenizer: &IdentTokenizer, text: &str) -> Terms {
        let words = tokenizer.tokenize(text);
        let mut counts: HashMap<String, u32> = HashMap::new();
        for word in &words {
            match counts.get_mut(word.as_str()) {
                Some(count) => *count += 1,
                None => {
                    counts.insert(word.clone(), 1);
                }
            }
        }
        let mut counts: Vec<(Box<str>, u32)> = counts.into_iter().map(|(w, c)| (w.into_boxed_str(), c)).collect();
        counts.sort();
        Terms { length: words.len() as u32, counts }
    }
}

impl Record for Terms {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend(self.length.to_le_bytes());
        for (word, count) in &self.counts {
            out.extend((word.len() as u16).to_le_bytes());
            out.extend(word.as_bytes());
            out.extend(count.to_le_bytes());
        }
    }

    fn decode(bytes: &[u8]) -> Option<Terms> {
        let length = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
        let mut rest = &bytes[4..];
        let mut counts = Vec::new();
        while !rest.is_empty() {
            let size = u16::from_le_bytes(rest.get(..2)?.try_into().ok()?) as usize;
            let word = std::str::from_utf8(rest.get(2..2 + size)?).ok()?;
            let count = u32::from_le_bytes(rest.get(2 + size..6 + size)?.try_into().ok()?);
            counts.push((word.into(), count));
            rest = &rest[6 + size..];
        }
        Some(Terms { length, counts })
    }
}

/// BM25 over a fixed set of documents, identified by position.
pub struct Lexical {
    tokenizer: IdentTokenizer,
    /// Each term's documents, with the term's saturated frequency in each.
    postings: HashMap<Box<str>, Vec<(u32, f32)>>,
    documents: usize,
}

impl Lexical {
    /// Index documents by their terms; a hit's id is its document's position.
    pub fn new(documents: &[Arc<Terms>]) -> Lexical {
        let total: u64 = documents.iter().map(|d| u64::from(d.length)).sum();
        let avgdl = if documents.is_empty() { 1.0 } else { (total as f32 / documents.len() as f32).max(1.0) };
        let mut postings: HashMap<Box<str>, Vec<(u32, f32)>> = HashMap::new();
        for (id, terms) in documents.iter().enumerate() {
            let length = terms.length as f32;
            for (word, count) in &terms.counts {
                let tf = *count as f32;
                let saturated = tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / avgdl));
                match postings.get_mut(word) {
                    Some(list) => list.push((id as u32, saturated)),
                    None => {
                        postings.insert(word.clone(), vec![(id as u32, saturated)]);
                    }
                }
            }
        }
        Lexical { tokenizer: IdentTokenizer::default(), postings, documents: documents.len() }
    }

    /// Every document sharing a term with `query`, best first (ties by
    /// position), with its score.
    pub fn rank(&self, query: &str) -> Vec<(u32, f32)> {
        let mut scores = vec![0f32; self.documents];
        // A word the query repeats counts each time, as in the crate.
        for word in self.tokenizer.tokenize(query) {
            let Some(documents) = self.postings.get(word.as_str()) else { continue };
            let df = documents.len() as f32;
            let idf = (1.0 + (self.documents as f32 - df + 0.5) / (df + 0.5)).ln();
            for &(id, saturated) in documents {
                scores[id as usize] += idf * saturated;
            }
        }
        let mut hits: Vec<(u32, f32)> =
            scores.into_iter().enumerate().filter(|(_, s)| *s > 0.0).map(|(id, s)| (id as u32, s)).collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits
    }
}

/// Splits identifiers (`camelCase`, `snake_case`, `kebab-case`, `dotted.names`)
/// into words, then applies the English tokenizer (stemming, stop words).
pub struct IdentTokenizer {
    inner: DefaultTokenizer,
}

impl Default for IdentTokenizer {
    fn default() -> Self {
        IdentTokenizer { inner: DefaultTokenizer::new(Language::English) }
    }
}

impl Tokenizer for IdentTokenizer {
    fn tokenize(&self, input: &str) -> Vec<String> {
        let mut words = self.inner.tokenize(&split_identifiers(input));
        // A number in a request is a value ("square root of 2"), not a word
        // of what it asks for; in a description it is an example.
        words.retain(|word| !word.chars().all(|c| c.is_ascii_digit()));
        words
    }
}

/// `getHTTPResponse_code` → `get HTTP Response code`. A word that joins
/// letters and digits with a hyphen (`SHA-256`, `UTF-8`) is also kept
/// joined, so "sha256" finds it as "sha 256" does.
pub fn split_identifiers(text: &str) -> Cow<'_, str> {
    let needs = text
        .as_bytes()
        .windows(2)
        .any(|w| (w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase()) || matches!(w[0], b'_' | b'.' | b'-' | b'/'));
    if !needs && !text.contains(['_', '.', '-', '/']) {
        return Cow::Borrowed(text);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if matches!(c, '_' | '.' | '-' | '/') {
            out.push(' ');
            continue;
        }
        if i > 0 && c.is_uppercase() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push(' ');
            }
        }
        out.push(c);
    }
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '-')) {
        if let Some((letters, digits)) = word.split_once('-')
            && !letters.is_empty()
            && letters.chars().all(char::is_alphabetic)
            && !digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_digit())
        {
            out.push(' ');
            out.push_str(letters);
            out.push_str(digits);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_split_into_words() {
        assert_eq!(split_identifiers("getHTTPResponse_code"), "get HTTP Response code");
        assert_eq!(split_identifiers("ChaDri.change_drink"), "Cha Dri change drink");
        assert_eq!(split_identifiers("plain words"), "plain words");
        assert_eq!(split_identifiers("Hash with SHA-256 or UTF-8-x."), "Hash with SHA 256 or UTF 8 x  SHA256");
        let tokenizer = IdentTokenizer::default();
        let words = tokenizer.tokenize("Hash data with SHA-256");
        assert!(tokenizer.tokenize("sha256").iter().all(|w| words.contains(w)), "{words:?}");
    }
}
