//! Ranking tools by what they do: BM25 (the `bm25` crate) over names,
//! descriptions and parameter names.
//!
//! Identifiers are split before the standard English tokenizer (stemming,
//! stop words) sees them, so `getWeatherForecast`, `get_weather_forecast`
//! and "weather forecast" meet. Names are repeated in the document to weigh
//! them above descriptions. Ranking only: no I/O, deterministic for a given
//! set of documents (ties broken by position).

use std::borrow::Cow;

use bm25::{DefaultTokenizer, Language, SearchEngine, SearchEngineBuilder, Tokenizer};

/// bm25 embeds tokens as hashed `u32`s.
type DefaultTokenEmbedder = u32;
use serde_json::Value;

use crate::catalog::{Catalog, Category, Skill, ToolEntry, ToolRecord};
use crate::contract::one_line;

/// What a search hit points at.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Model-facing tool name, or the skill's name.
    pub name: String,
    /// Its category.
    pub category: Category,
    /// The plugin, server or skill it belongs to.
    pub origin: String,
    /// One line on what it does.
    pub summary: String,
}

/// A BM25 index over tools (and skills).
pub struct SearchIndex {
    engine: SearchEngine<u32, DefaultTokenEmbedder, IdentTokenizer>,
    entries: Vec<Entry>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex").field("entries", &self.entries.len()).finish()
    }
}

/// Longest part of a description that is indexed (the start says the most).
const MAX_DESCRIPTION_CHARS: usize = 1200;

impl SearchIndex {
    /// Index `entries`, each with the text to match it by.
    pub fn new(documents: Vec<(Entry, String)>) -> SearchIndex {
        let (entries, texts): (Vec<Entry>, Vec<String>) = documents.into_iter().unzip();
        let docs: Vec<bm25::Document<u32>> =
            texts.into_iter().enumerate().map(|(i, text)| bm25::Document::new(i as u32, text)).collect();
        let engine = SearchEngineBuilder::<u32, DefaultTokenEmbedder, IdentTokenizer>::with_tokenizer_and_documents(
            IdentTokenizer::default(),
            docs,
        )
        .build();
        SearchIndex { engine, entries }
    }

    /// Index every tool and skill of `catalog`. Plugins are indexed by
    /// their stubs only (name, summary), so the index does not depend on
    /// which plugins happen to be loaded; MCP tools with their full
    /// descriptions and parameters.
    pub fn for_catalog(catalog: &Catalog) -> SearchIndex {
        let mut documents: Vec<(Entry, String)> = catalog
            .tools()
            .iter()
            .map(|entry| {
                let text = match catalog.record(entry).filter(|_| entry.category == Category::Mcp) {
                    Some(record) => document_text(&record),
                    None => entry_text(entry),
                };
                (Entry::of_entry(entry), text)
            })
            .collect();
        documents.extend(catalog.skills().map(|s| (Entry::of_skill(s), skill_text(s))));
        SearchIndex::new(documents)
    }

    /// Index tool records only.
    pub fn for_records(records: &[ToolRecord]) -> SearchIndex {
        SearchIndex::new(records.iter().map(|r| (Entry::of_record(r), document_text(r))).collect())
    }

    /// The best `limit` entries for `query` that pass `keep`, best first,
    /// with their scores. Entries sharing no term with the query are left out.
    pub fn search(&self, query: &str, limit: usize, keep: impl Fn(&Entry) -> bool) -> Vec<(&Entry, f32)> {
        let mut hits: Vec<(u32, f32)> =
            self.engine.search(query, None).into_iter().map(|hit| (hit.document.id, hit.score)).collect();
        // Deterministic order: by score, then by position in the index.
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.into_iter()
            .map(|(id, score)| (&self.entries[id as usize], score))
            .filter(|(entry, _)| keep(entry))
            .take(limit)
            .collect()
    }

    /// Number of indexed entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl Entry {
    /// The entry of a tool record.
    pub fn of_record(record: &ToolRecord) -> Entry {
        Entry {
            name: record.name.clone(),
            category: record.category,
            origin: record.origin.clone(),
            summary: record.summary.clone(),
        }
    }

    /// The entry of a catalog tool.
    pub fn of_entry(entry: &ToolEntry) -> Entry {
        Entry {
            name: entry.name.clone(),
            category: entry.category,
            origin: entry.origin.clone(),
            summary: entry.summary.clone(),
        }
    }

    /// The entry of a skill.
    pub fn of_skill(skill: &Skill) -> Entry {
        Entry {
            name: skill.name.clone(),
            category: Category::Skill,
            origin: skill.name.clone(),
            summary: one_line(&skill.description, crate::catalog::SUMMARY_CHARS),
        }
    }
}

/// The text a tool is matched by: its action name (twice, for weight), its
/// origin, its description, and its parameters (names, descriptions and
/// allowed values, nested ones included).
pub fn document_text(record: &ToolRecord) -> String {
    let mut text = String::new();
    for _ in 0..NAME_WEIGHT {
        text.push_str(&record.action);
        text.push(' ');
    }
    text.push_str(&record.origin);
    text.push(' ');
    text.extend(record.description.chars().take(MAX_DESCRIPTION_CHARS));
    if let Some(schema) = &record.input_schema {
        parameters_text(schema, 0, &mut text);
    }
    text
}

/// The text a tool known from its stub is matched by: its action name
/// (twice), its origin and its summary.
fn entry_text(entry: &ToolEntry) -> String {
    let mut text = String::new();
    for _ in 0..NAME_WEIGHT {
        text.push_str(&entry.action);
        text.push(' ');
    }
    text.push_str(&entry.origin);
    text.push(' ');
    text.push_str(&entry.summary);
    text
}

/// How many times the action name is repeated in its document.
const NAME_WEIGHT: usize = 2;

/// Characters of each parameter description that are indexed.
const MAX_PARAMETER_CHARS: usize = 300;

fn parameters_text(schema: &Value, depth: usize, text: &mut String) {
    if depth > 3 {
        return;
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            text.push(' ');
            text.push_str(name);
            if let Some(d) = property.get("description").and_then(Value::as_str) {
                text.push(' ');
                text.extend(d.chars().take(MAX_PARAMETER_CHARS));
            }
            if let Some(values) = property.get("enum").and_then(Value::as_array) {
                for v in values.iter().filter_map(Value::as_str).take(20) {
                    text.push(' ');
                    text.push_str(v);
                }
            }
            parameters_text(property, depth + 1, text);
        }
    }
    if let Some(items) = schema.get("items") {
        parameters_text(items, depth + 1, text);
    }
}

fn skill_text(skill: &Skill) -> String {
    format!("{0} {0} {1}", skill.name, skill.description)
}

/// The search index of the latest catalog version searched, built once
/// per version and shared by every session.
#[derive(Debug, Default)]
pub struct SearchCache {
    latest: std::sync::Mutex<Option<(u64, std::sync::Arc<SearchIndex>)>>,
}

impl SearchCache {
    /// The index of `catalog`.
    pub fn index(&self, catalog: &Catalog) -> std::sync::Arc<SearchIndex> {
        let mut latest = self.latest.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((version, index)) = latest.as_ref()
            && *version == catalog.version()
        {
            return index.clone();
        }
        let index = std::sync::Arc::new(SearchIndex::for_catalog(catalog));
        *latest = Some((catalog.version(), index.clone()));
        index
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

    fn record(name: &str, description: &str) -> ToolRecord {
        ToolRecord {
            name: name.into(),
            origin: "t".into(),
            action: name.into(),
            summary: description.into(),
            description: description.into(),
            category: Category::Builtin,
            access: crate::contract::Access::Read,
            input_schema: None,
            output_schema: None,
        }
    }

    #[test]
    fn ranks_by_name_and_description() {
        let records = vec![
            record("get_weather_forecast", "Weather forecast for a city"),
            record("send_email", "Send an email message to a recipient"),
            record("convert_currency", "Convert an amount between currencies"),
        ];
        let index = SearchIndex::for_records(&records);
        let hits = index.search("what's the weather in Paris tomorrow", 3, |_| true);
        assert_eq!(hits[0].0.name, "get_weather_forecast");
        let hits = index.search("email my boss", 3, |_| true);
        assert_eq!(hits[0].0.name, "send_email");
        assert!(index.search("zzz qqq", 3, |_| true).is_empty());
        let none = index.search("email", 3, |e| e.name != "send_email");
        assert!(none.iter().all(|(e, _)| e.name != "send_email"));
    }
}
