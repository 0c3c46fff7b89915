//! The lexical arm: BM25 (the `bm25` crate) over names, descriptions and
//! parameter names.
//!
//! Identifiers are split before the standard English tokenizer (stemming,
//! stop words) sees them, so `getWeatherForecast`, `get_weather_forecast`
//! and "weather forecast" meet.

use std::borrow::Cow;

use bm25::{DefaultTokenizer, Language, SearchEngine, SearchEngineBuilder, Tokenizer};

/// BM25 over a fixed set of documents, identified by position.
pub struct Lexical {
    engine: SearchEngine<u32, u32, IdentTokenizer>,
}

impl Lexical {
    /// Index `texts`; a hit's id is its text's position.
    pub fn new(texts: Vec<String>) -> Lexical {
        let docs: Vec<bm25::Document<u32>> =
            texts.into_iter().enumerate().map(|(i, text)| bm25::Document::new(i as u32, text)).collect();
        let engine = SearchEngineBuilder::<u32, u32, IdentTokenizer>::with_tokenizer_and_documents(
            IdentTokenizer::default(),
            docs,
        )
        .build();
        Lexical { engine }
    }

    /// Every document sharing a term with `query`, best first (ties by
    /// position), with its score.
    pub fn rank(&self, query: &str) -> Vec<(u32, f32)> {
        let mut hits: Vec<(u32, f32)> =
            self.engine.search(query, None).into_iter().map(|hit| (hit.document.id, hit.score)).collect();
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
        self.inner.tokenize(&split_identifiers(input))
    }
}

/// `getHTTPResponse_code` → `get HTTP Response code`.
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
    }
}
