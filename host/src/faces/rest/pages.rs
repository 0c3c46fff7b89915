//! Levels 1 and 2 a page at a time, each page serialized once per catalog
//! version and set of allowed categories: a snapshot never changes, so
//! neither do its pages.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::ToolEntry;
use crate::session::{Listing, Scope};

/// Level 1.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Names<'a> {
    /// The catalog version these names belong to.
    version: u64,
    /// The tools' model-facing names, in catalog order.
    tools: Vec<&'a str>,
    /// The cursor of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

/// Level 2.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Summaries<'a> {
    /// The catalog version.
    version: u64,
    /// The tools in one line each (name, origin, category, summary), in catalog order.
    tools: &'a [ToolEntry],
    /// The cursor of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

/// Which page of a listing: `GET /v1/tools?limit=100&cursor=...`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub(crate) struct Page {
    /// Where to go on from: the `next_cursor` of the previous page (opaque).
    cursor: Option<String>,
    /// At most this many tools, 1 to 5,000 (default: 5,000 at level 1, 500 at level 2).
    limit: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Level {
    Names,
    Summaries,
}

impl Level {
    /// The page size when the client asks for none: level 1 fits a large
    /// catalog in one answer; level 2 (~200 bytes a tool) pages, so that
    /// one answer stays small enough to be a discovery call.
    fn default_limit(self) -> usize {
        match self {
            Level::Names => MAX_LIMIT,
            Level::Summaries => 500,
        }
    }
}

/// The largest page.
const MAX_LIMIT: usize = 5000;

/// Pages kept per snapshot; more distinct pages than this start over.
const PAGES_KEPT: usize = 256;

/// The pages of the latest snapshot served.
#[derive(Default)]
pub(crate) struct Pages {
    latest: Mutex<Option<Kept>>,
}

struct Kept {
    /// The catalog version and what the policy allows.
    key: (u64, Scope),
    /// What the policy allows of the snapshot's tools.
    allowed: Vec<ToolEntry>,
    /// Pages served so far, by level, offset and limit.
    pages: HashMap<(Level, usize, usize), Bytes>,
}

impl Pages {
    /// One page of level 1 or 2 of `listing`, as JSON with its version; an
    /// error for a limit or cursor the API does not accept.
    pub(crate) fn page(&self, listing: &Listing, level: Level, page: &Page) -> Result<(u64, Bytes), String> {
        let limit = page.limit.unwrap_or(level.default_limit());
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(format!("limit must be 1 to {MAX_LIMIT}, not {limit}"));
        }
        let offset = match page.cursor.as_deref().map(str::parse::<usize>) {
            None => 0,
            Some(Ok(offset)) => offset,
            Some(Err(_)) => return Err("the cursor is not one this server gave".into()),
        };
        let version = listing.version();
        let key = (version, listing.scope());
        let mut latest = self.latest.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let kept = match latest.take().filter(|k| k.key == key) {
            Some(kept) => latest.insert(kept),
            None => latest.insert(Kept { key, allowed: listing.tools().cloned().collect(), pages: HashMap::new() }),
        };
        if let Some(bytes) = kept.pages.get(&(level, offset, limit)) {
            return Ok((version, bytes.clone()));
        }
        let tools = &kept.allowed[offset.min(kept.allowed.len())..];
        let (tools, rest) = tools.split_at(limit.min(tools.len()));
        let next_cursor = (!rest.is_empty()).then(|| (offset + tools.len()).to_string());
        let json = match level {
            Level::Names => {
                let names = tools.iter().map(|l| l.name.as_str()).collect();
                serde_json::to_vec(&Names { version, tools: names, next_cursor })
            }
            Level::Summaries => serde_json::to_vec(&Summaries { version, tools, next_cursor }),
        };
        let bytes = Bytes::from(json.map_err(|e| format!("cannot serialize the page: {e}"))?);
        if kept.pages.len() >= PAGES_KEPT {
            kept.pages.clear();
        }
        kept.pages.insert((level, offset, limit), bytes.clone());
        Ok((version, bytes))
    }
}
