//! The dashboard's own reads: who is signed in, the context footprint,
//! and the search playground.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::{Dashboard, refused};
use crate::catalog::shown::shown;
use crate::disclosure::footprint::Footprint;
use crate::disclosure::search::{Explained, Ranker};
use crate::faces::guard::Principal;
use crate::session::Session;

/// `GET /ui/api/me`.
#[derive(Serialize)]
struct Me {
    /// Who the dashboard works for: `operator` (the token's holder, or
    /// anyone on a loopback server without a token), or the subject a
    /// sign-in through the authorization server named.
    principal: String,
    /// That subject's scopes, as its access token carried them (OAuth).
    #[serde(skip_serializing_if = "Option::is_none")]
    scopes: Option<Vec<String>>,
    /// The token every request that changes something carries
    /// (`X-CSRF-Token`); empty when the browser has no sign-in.
    csrf: String,
    /// The agent profiles an operator may look through (a signed-in
    /// principal: its own).
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
    let own = ui.agent.clone().unwrap_or_else(|| "default".into());
    let token = principal.as_deref().and_then(Principal::oauth);
    let (who, scopes, agents, agent) = match token {
        Some(token) => {
            let agent = token.agent.clone().unwrap_or(own);
            (shown(&token.subject), Some(token.grants.sent().to_vec()), vec![agent.clone()], agent)
        }
        None => {
            let mut agents = vec!["default".to_owned()];
            agents.extend(ui.host.agents().map(str::to_owned));
            agents.dedup();
            ("operator".to_owned(), None, agents, own)
        }
    };
    Json(Me {
        principal: who,
        scopes,
        csrf,
        agents,
        agent,
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

/// The session a request works in: an OAuth principal's own (whatever
/// `agent` says), else one of `agent`'s profile, which an operator
/// chooses (an error names the profiles there are).
fn session_of(ui: &Dashboard, agent: &Agent, principal: Option<&Principal>) -> crate::error::Result<Session> {
    if principal.and_then(Principal::oauth).is_some() {
        return ui.sessions.of(principal);
    }
    let name = agent.agent.as_deref().filter(|a| !a.is_empty() && *a != "default");
    ui.host.open_session(name)
}

type Who = Option<axum::Extension<Principal>>;

/// `GET /ui/api/footprint`.
#[derive(Serialize)]
struct Counted {
    /// The profile counted.
    agent: String,
    #[serde(flatten)]
    footprint: Footprint,
}

pub(super) async fn footprint(State(ui): State<Arc<Dashboard>>, Query(agent): Query<Agent>, who: Who) -> Response {
    counted(&ui, agent, who.as_deref(), false).await
}

/// `POST /ui/api/footprint/load`: every plugin loaded (and live server
/// listed) first, so every tool's cost is known.
pub(super) async fn footprint_loaded(
    State(ui): State<Arc<Dashboard>>,
    Query(agent): Query<Agent>,
    who: Who,
) -> Response {
    counted(&ui, agent, who.as_deref(), true).await
}

async fn counted(ui: &Dashboard, agent: Agent, who: Option<&Principal>, load: bool) -> Response {
    let session = match session_of(ui, &agent, who) {
        Ok(session) => session,
        Err(error) => return refused(StatusCode::BAD_REQUEST, error),
    };
    let footprint = session.footprint(load).await;
    let agent = session.policy().agent.clone().unwrap_or_else(|| "default".into());
    Json(Counted { agent, footprint }).into_response()
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

pub(super) async fn search(State(ui): State<Arc<Dashboard>>, Query(query): Query<SearchQuery>, who: Who) -> Response {
    let mut session = match session_of(&ui, &Agent { agent: query.agent.clone() }, who.as_deref()) {
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
    principal: Who,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    // The token mode's holder, a token-mode sign-in, or anyone on a
    // loopback server without a token is an operator, who may choose the
    // profile; an OAuth principal (an access token, or a sign-in through
    // the issuer) calls as its own, held to its scopes.
    let session = session_of(&ui, &agent, principal.as_deref());
    match session {
        Ok(session) => crate::faces::rest::answer_call(session, "/ui/api/call/{name}", name, &headers, &body).await,
        Err(error) => refused(StatusCode::BAD_REQUEST, error),
    }
}
