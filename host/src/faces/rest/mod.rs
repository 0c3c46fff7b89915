//! The REST face: the catalog at three levels (names → summaries → full
//! schema), calls, the Tier-1 text, provider exports and an OpenAPI
//! document, with `ETag`s from the catalog version.
//!
//! ```text
//! GET  /v1/tools               level 1: names (pages of 5,000)
//! GET  /v1/tools/summary       level 2: name, category, origin, one line (pages of 500)
//! GET  /v1/tools/{name}        level 3: the full MCP definition (loads its plugin)
//! POST /v1/tools/{name}/call   call it with a JSON object
//! GET  /v1/prompt              the Tier-1 text
//! GET  /v1/status              plugins (kind, version, state), rejected files, MCP servers
//! GET  /v1/audit               the latest audited calls (limit, resource)
//! GET  /v1/export/openai       every tool as OpenAI function tools (loads every plugin);
//!                               `?strict=true` for strict mode's schemas
//! GET  /v1/export/openai-responses   the same, in the Responses API's shape
//! GET  /v1/export/anthropic    every tool with `defer_loading`, plus a tool-search tool
//! GET  /v1/openapi.json        this API
//! ```
//!
//! [`ROUTES`](routes::ROUTES) is the one table of these routes: the router and the OpenAPI
//! document ([`openapi`]) are both made from it. Every request works on a
//! clone of one open session whose policy was resolved when the router
//! was made.

mod errors;
mod openapi;
mod pages;
mod routes;

pub(crate) use self::routes::answer_call;
pub use self::routes::router;
