//! Choosing which built-in tools stay resident for a turn.
//!
//! When a session has more built-in tools than the threshold, a
//! [`Selector`] picks the most relevant to the user's message; the rest
//! stay behind `request_tools`. The default ranks as search does (BM25
//! fused with embeddings when the model is there, see [`search`](super::search)); an
//! OpenAI-compatible chat endpoint can be configured instead. A selector
//! that fails never fails the turn: the caller falls back to the full set
//! and logs why.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::catalog::ToolRecord;
use std::sync::Arc;

use crate::disclosure::search::SearchIndex;
use crate::disclosure::search::analyzer::Analyzer;
use crate::error::{Error, Result};

/// A future a selector returns.
pub type SelectFuture<'a> = Pin<Box<dyn Future<Output = std::result::Result<Vec<String>, String>> + Send + 'a>>;

/// Picks at most `max` of `candidates` for `query`, by name.
pub trait Selector: Send + Sync {
    /// The chosen tool names, most relevant first; an error explains a failure.
    fn select<'a>(&'a self, query: &'a str, candidates: &'a [ToolRecord], max: usize) -> SelectFuture<'a>;
}

/// Which selector a host uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SelectorKind {
    /// The search ranking (BM25, fused with embeddings when the model
    /// is there); `bm25` is its older name.
    #[default]
    #[serde(alias = "bm25")]
    Rank,
    /// An OpenAI-compatible chat-completions endpoint.
    Llm,
}

/// The `[selector]` table of the config file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectorConfig {
    /// `rank` (default) or `llm`.
    #[serde(default)]
    pub kind: SelectorKind,
    /// For `llm`: the chat-completions URL, e.g. `https://api.openai.com/v1/chat/completions`.
    pub url: Option<String>,
    /// For `llm`: the model name.
    pub model: Option<String>,
    /// For `llm`: the environment variable holding the API key (sent as a bearer token).
    pub api_key_env: Option<String>,
    /// For `llm`: how long to wait for an answer, in ms (default 10000).
    pub timeout_ms: Option<u64>,
}

impl SelectorConfig {
    /// Check that an `llm` selector has what it needs.
    pub fn validate(&self) -> Result<()> {
        if self.kind == SelectorKind::Llm && (self.url.is_none() || self.model.is_none()) {
            return Err(Error::config("[selector]", "kind = \"llm\" needs `url` and `model`"));
        }
        Ok(())
    }

    /// Build the selector this config describes; `rank` ranks with what
    /// `analyzer` makes of the candidates.
    pub fn build(&self, analyzer: Arc<Analyzer>) -> Result<Box<dyn Selector>> {
        self.validate()?;
        Ok(match self.kind {
            SelectorKind::Rank => Box::new(RankSelector { analyzer }),
            SelectorKind::Llm => Box::new(LlmSelector::new(
                self.url.clone().unwrap_or_default(),
                self.model.clone().unwrap_or_default(),
                self.api_key_env.as_deref().and_then(|var| std::env::var(var).ok()),
                Duration::from_millis(self.timeout_ms.unwrap_or(10_000)),
            )?),
        })
    }
}

/// Ranks candidates against the user's message as search does. The
/// candidates' terms and vectors are remembered by the analyzer, so a turn
/// analyses only the message.
#[derive(Debug, Clone)]
pub struct RankSelector {
    /// What the candidates become (BM25 alone without a model).
    pub analyzer: Arc<Analyzer>,
}

impl Selector for RankSelector {
    fn select<'a>(&'a self, query: &'a str, candidates: &'a [ToolRecord], max: usize) -> SelectFuture<'a> {
        Box::pin(async move {
            let index = SearchIndex::for_records(candidates, &self.analyzer);
            Ok(index.search(query, max, |_| true).into_iter().map(|(entry, _)| entry.name.clone()).collect())
        })
    }
}

/// Asks a chat model which tools fit the user's message.
pub struct LlmSelector {
    client: reqwest::Client,
    url: String,
    model: String,
    api_key: Option<String>,
}

impl std::fmt::Debug for LlmSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSelector").field("url", &self.url).field("model", &self.model).finish()
    }
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    temperature: f32,
    messages: [ChatMessage; 2],
}

#[derive(Serialize)]
struct ChatMessage {
    role: &'static str,
    content: String,
}

#[derive(Deserialize)]
struct ChatResponse {
    choices: Vec<ChatChoice>,
}

#[derive(Deserialize)]
struct ChatChoice {
    message: ChatReply,
}

#[derive(Deserialize)]
struct ChatReply {
    content: Option<String>,
}

impl LlmSelector {
    /// A selector calling `url` with `model`.
    pub fn new(url: String, model: String, api_key: Option<String>, timeout: Duration) -> Result<LlmSelector> {
        // reqwest is built without a bundled crypto provider; use ring,
        // which the HTTP stack of wasi-http already brings.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| Error::config("[selector]", format!("cannot build the HTTP client: {e}")))?;
        Ok(LlmSelector { client, url, model, api_key })
    }

    async fn ask(
        &self,
        query: &str,
        candidates: &[ToolRecord],
        max: usize,
    ) -> std::result::Result<Vec<String>, String> {
        let catalog: String = candidates.iter().map(|c| format!("{}: {}\n", c.name, c.summary)).collect();
        let request = ChatRequest {
            model: &self.model,
            temperature: 0.0,
            messages: [
                ChatMessage {
                    role: "system",
                    content: format!(
                        "You choose tools for an assistant. From the catalog, pick at most {max} tools that \
                         help answer the user's message, most useful first. Reply with only a JSON array of \
                         tool names, e.g. [\"a\", \"b\"]."
                    ),
                },
                ChatMessage { role: "user", content: format!("Catalog:\n{catalog}\nUser message:\n{query}") },
            ],
        };
        let mut call = self.client.post(&self.url).json(&request);
        if let Some(key) = &self.api_key {
            call = call.bearer_auth(key);
        }
        let response = call.send().await.map_err(|e| format!("request failed: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("the endpoint answered {status}"));
        }
        let reply: ChatResponse = response.json().await.map_err(|e| format!("not a chat completion: {e}"))?;
        let text = reply.choices.into_iter().next().and_then(|c| c.message.content).ok_or("an empty reply")?;
        let names = parse_names(&text).ok_or_else(|| format!("no JSON array of names in the reply: {text:?}"))?;
        let known: Vec<String> =
            names.into_iter().filter(|n| candidates.iter().any(|c| &c.name == n)).take(max).collect();
        if known.is_empty() {
            return Err(format!("the reply names no known tool: {text:?}"));
        }
        Ok(known)
    }
}

impl Selector for LlmSelector {
    fn select<'a>(&'a self, query: &'a str, candidates: &'a [ToolRecord], max: usize) -> SelectFuture<'a> {
        Box::pin(self.ask(query, candidates, max))
    }
}

/// The first JSON array of strings in `text` (models wrap it in prose or fences).
fn parse_names(text: &str) -> Option<Vec<String>> {
    let start = text.find('[')?;
    let end = text.rfind(']')?;
    serde_json::from_str(text.get(start..=end)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_in_chatty_replies() {
        assert_eq!(parse_names("```json\n[\"a\", \"b\"]\n```"), Some(vec!["a".into(), "b".into()]));
        assert_eq!(parse_names("no list here"), None);
        assert_eq!(parse_names("[1, 2]"), None);
    }

    #[test]
    fn llm_selector_needs_url_and_model() {
        let config = SelectorConfig { kind: SelectorKind::Llm, ..Default::default() };
        assert!(config.validate().is_err());
    }

    #[test]
    fn the_older_bm25_kind_still_reads_as_rank() {
        let config: SelectorConfig = toml::from_str("kind = \"bm25\"").unwrap();
        assert_eq!(config.kind, SelectorKind::Rank);
        let config: SelectorConfig = toml::from_str("kind = \"rank\"").unwrap();
        assert_eq!(config.kind, SelectorKind::Rank);
    }
}
