//! Ranking tools by what they do, with two arms fused.
//!
//! The [lexical](lexical) arm is BM25 over names, descriptions and
//! parameters: exact where the user's words are the tool's. The semantic arm
//! embeds each tool's name and description with a [static
//! model](model::StaticModel) and ranks by cosine similarity, finding
//! `get_forecast` for "is it going to rain tomorrow". The two rankings are
//! fused by reciprocal rank ([`fuse`]). Without a model, BM25 ranks alone.
//! Besides tools and skills, resources (databases, connectors, MCP servers)
//! are documents too, by what is known of them without connecting.
//! What each text becomes (terms, vector) is remembered by the
//! [`analyzer`](analyzer::Analyzer). Ranking is deterministic for a given
//! set of documents, ties broken by position.

pub mod analyzer;
mod cache;
mod document;
mod fuse;
mod index;
pub mod lexical;
pub mod model;
pub mod rerank;
mod resources;
pub mod settings;
pub mod store;

pub use self::analyzer::Ranker;
pub use self::cache::SearchCache;
pub(crate) use self::document::kin_of;
pub use self::document::{Document, Entry};
pub use self::index::{Arm, Collapsed, Explained, SearchIndex};
