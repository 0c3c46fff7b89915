//! The dashboard's own reads: who is signed in, the context footprint,
//! and the search playground.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::{Dashboard, refused};
use crate::disclosure::footprint::Footprint;
use crate::disclosure::search::{Explained, Ranker};
use crate::faces::guard::Principal;
use crate::session::Session;

/// `GET /ui/api/me`.
#[derive(Serialize)]
struct Me {
    /// Who the dashboard works for: `operator` (the token's holder, or
    /// anyone on a loopback server without a token).
    principal: &'static str,
    /// The token every request that changes something carries
    /// (`X-CSRF-Token`); empty when the browser has no sign-in.
    csrf: String,
    /// The agent profiles an operator may look through.
    agents: Vec<String>,
    /// The profile the call page works as.
    agent: String,
    /// The host's version.
    version: &'static str,
    /// Which process answers (each replica shows its own figures).
    replica: String,
    /// Whether signing in takes a token (and signing out means anything).
    token_mode: bool,
}

pub(super) async fn me(State(ui): State<Arc<Dashboard>>, principal: Option<axum::Extension<Principal>>) -> Response {
    let csrf = match principal.as_deref() {
        Some(Principal::SignedIn(signed)) => signed.csrf.clone(),
        _ => String::new(),
    };
    let mut agents = vec!["default".to_owned()];
    agents.extend(ui.host.agents().map(str::to_owned));
    agents.dedup();
    Json(Me {
        principal: "operator",
        csrf,
        agents,
        agent: ui.agent.clone().unwrap_or_else(|| "default".into()),
        version: env!("CARGO_PKG_VERSION"),
        replica: replica(),
        token_mode: ui.sign_ins.token_mode(),
    })
    .into_response()
}

/// This process, as the dashboard names it.
pub(super) fn replica() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = crate::catalog::shown::shown(host.trim());
    format!("{host} pid {}", std::process::id())
}

/// Which agent profile: `?agent=NAME` (default: the default profile).
#[derive(Deserialize)]
pub(super) struct Agent {
    agent: Option<String>,
}

/// A session of `agent`'s profile (an error names the profiles there are).
fn session_of(ui: &Dashboard, agent: &Agent) -> crate::error::Result<Session> {
    let name = agent.agent.as_deref().filter(|a| !a.is_empty() && *a != "default");
    ui.host.open_session(name)
}

/// `GET /ui/api/footprint`.
#[derive(Serialize)]
struct Counted {
    /// The profile counted.
    agent: String,
    #[serde(flatten)]
    footprint: Footprint,
}

pub(super) async fn footprint(State(ui): State<Arc<Dashboard>>, Query(agent): Query<Agent>) -> Response {
    counted(&ui, agent, false).await
}

/// `POST /ui/api/footprint/load`: every plugin loaded (and live server
/// listed) first, so every tool's cost is known.
pub(super) async fn footprint_loaded(State(ui): State<Arc<Dashboard>>, Query(agent): Query<Agent>) -> Response {
    counted(&ui, agent, true).await
}

async fn counted(ui: &Dashboard, agent: Agent, load: bool) -> Response {
    let session = match session_of(ui, &agent) {
        Ok(session) => session,
        Err(error) => return refused(StatusCode::BAD_REQUEST, error),
    };
    let footprint = session.footprint(load).await;
    Json(Counted { agent: agent.agent.unwrap_or_else(|| "default".into()), footprint }).into_response()
}

/// `GET /ui/api/search?q=…&detail=summary&limit=10&agent=…`.
#[derive(Deserialize)]
pub(super) struct SearchQuery {
    q: String,
    #[serde(default = "summary")]
    detail: String,
    #[serde(default = "ten")]
    limit: u32,
    agent: Option<String>,
}

fn summary() -> String {
    "summary".into()
}

fn ten() -> u32 {
    10
}

/// The search playground's answer.
#[derive(Serialize)]
struct Searched {
    /// `hybrid` (BM25 and the embedding, fused) or `bm25`.
    ranker: Ranker,
    /// The ranking, best first, each hit with its rank in each arm.
    hits: Vec<Explained>,
    /// What `search_tools` answers a model, at this detail.
    answer: String,
    /// Whether that answer is an error.
    is_error: bool,
}

pub(super) async fn search(State(ui): State<Arc<Dashboard>>, Query(query): Query<SearchQuery>) -> Response {
    let mut session = match session_of(&ui, &Agent { agent: query.agent.clone() }) {
        Ok(session) => session,
        Err(error) => return refused(StatusCode::BAD_REQUEST, error),
    };
    let (ranker, hits) = session.explain_search(&query.q, query.limit.clamp(1, 100) as usize);
    let arguments = serde_json::json!({"query": query.q, "detail": query.detail, "limit": query.limit});
    // The meta-tool itself, on a throwaway session: what a model would read.
    let outcome = session.call("search_tools", arguments).await;
    Json(Searched { ranker, hits, answer: outcome.text, is_error: outcome.is_error }).into_response()
}

/// `POST /ui/api/call/{name}?agent=…`: the call page's call, made with the
/// profile the operator chose (default: the default profile), answered
/// as `POST /v1/tools/{name}/call` answers.
pub(super) async fn call(
    State(ui): State<Arc<Dashboard>>,
    axum::extract::Path(name): axum::extract::Path<String>,
    Query(agent): Query<Agent>,
    principal: Option<axum::Extension<Principal>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    // The token mode's holder, a sign-in, or anyone on a loopback server
    // without a token is an operator, who may choose the profile; an
    // access token's principal calls as its own, held to its scopes.
    let session = match principal.as_deref() {
        Some(token @ Principal::Token(_)) => {
            let own = ui.host.open_session(ui.agent.as_deref());
            own.and_then(|own| crate::faces::principals::ByPrincipal::new(ui.host.clone(), own).of(Some(token)))
        }
        _ => session_of(&ui, &agent),
    };
    match session {
        Ok(session) => crate::faces::rest::answer_call(session, "/ui/api/call/{name}", name, &headers, &body).await,
        Err(error) => refused(StatusCode::BAD_REQUEST, error),
    }
}
