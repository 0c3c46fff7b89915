//! Live calls: the audit log's records, paged back by id, and followed as
//! they are kept (server-sent events). A record shows a call's arguments
//! only when `[audit] params` keeps them.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};

use super::{Dashboard, refused};
use crate::audit::AuditRecord;
use crate::faces::guard::Principal;

/// Whether `who` may see `record`: an operator sees every call, an OAuth
/// principal its own (or every one with `quiver:*:admin`).
pub(super) fn visible(who: Option<&Principal>, record: &AuditRecord) -> bool {
    who.and_then(Principal::oauth).is_none_or(|principal| principal.sees(record))
}

/// Which calls: `GET /ui/api/calls?limit=50&before=120&tool=…&outcome=error`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Filter {
    /// At most this many (default 50, at most 500).
    limit: Option<usize>,
    /// Only calls with an id below this one (the `next_before` of the
    /// page before).
    before: Option<u64>,
    tool: Option<String>,
    resource: Option<String>,
    agent: Option<String>,
    /// `ok`, `error` (any failure), or one error kind.
    outcome: Option<String>,
}

impl Filter {
    fn keeps(&self, record: &AuditRecord) -> bool {
        let is = |wanted: &Option<String>, value: &str| wanted.as_deref().is_none_or(|w| w.is_empty() || w == value);
        is(&self.tool, &record.tool)
            && is(&self.resource, &record.resource)
            && is(&self.agent, record.agent.as_deref().unwrap_or("default"))
            && match self.outcome.as_deref() {
                None | Some("") => true,
                Some("error") => record.outcome != "ok",
                Some(outcome) => record.outcome == outcome,
            }
    }
}

/// A page of calls.
#[derive(Serialize)]
struct Page {
    /// Newest first.
    calls: Vec<AuditRecord>,
    /// Where the next page (older calls) starts; none when this page
    /// reached the oldest call kept.
    next_before: Option<u64>,
    /// The oldest call kept (older ones are in the audit file, if any).
    oldest_kept: Option<u64>,
}

pub(super) async fn calls(
    State(ui): State<Arc<Dashboard>>,
    Query(filter): Query<Filter>,
    who: Option<axum::Extension<Principal>>,
) -> Response {
    let Some(log) = ui.host.audit_log() else {
        return refused(StatusCode::SERVICE_UNAVAILABLE, "this host keeps no audit log");
    };
    let limit = filter.limit.unwrap_or(50).clamp(1, 500);
    let (calls, oldest_kept) = log.before(filter.before, limit, |r| visible(who.as_deref(), r) && filter.keeps(r));
    let next_before = calls.last().map(|r| r.id).filter(|last| calls.len() == limit && Some(*last) != oldest_kept);
    axum::Json(Page { calls, next_before, oldest_kept }).into_response()
}

/// Every call from now on as an event `call` (its id as the event id);
/// `missed` with a count when this follower fell behind. The stream ends
/// when the server shuts down, and when the follower's sign-in or access
/// token does (signed out, or expired).
pub(super) async fn follow(State(ui): State<Arc<Dashboard>>, who: Option<axum::Extension<Principal>>) -> Response {
    let Some(log) = ui.host.audit_log() else {
        return refused(StatusCode::SERVICE_UNAVAILABLE, "this host keeps no audit log");
    };
    let who = who.map(|w| w.0);
    let ends = match &who {
        Some(Principal::SignedIn(signed)) => ui.sign_ins.until(signed).await,
        Some(Principal::Token(token)) => Some(std::time::Instant::now() + token.left()),
        _ => None,
    };
    let sign_ins = ui.sign_ins.clone();
    let receiver = log.follow();
    let events = futures_util::stream::unfold((receiver, who), move |(mut receiver, who)| {
        let sign_ins = sign_ins.clone();
        async move {
            use tokio::sync::broadcast::error::RecvError;
            let event = loop {
                let received = receiver.recv().await;
                if let Some(Principal::SignedIn(signed)) = &who
                    && !sign_ins.holds(signed).await
                {
                    return None;
                }
                match received {
                    Ok(record) if !visible(who.as_ref(), &record) => continue,
                    Ok(record) => {
                        break Event::default().event("call").id(record.id.to_string()).json_data(&*record).ok()?;
                    }
                    Err(RecvError::Lagged(missed)) => break Event::default().event("missed").data(missed.to_string()),
                    Err(RecvError::Closed) => return None,
                }
            };
            Some((Ok::<_, std::convert::Infallible>(event), (receiver, who)))
        }
    });
    let ended = async move {
        match ends {
            Some(at) => tokio::time::sleep_until(at.into()).await,
            None => std::future::pending().await,
        }
    };
    let events = events.take_until(ui.shutdown.clone().cancelled_owned()).take_until(Box::pin(ended));
    Sse::new(events).keep_alive(KeepAlive::default()).into_response()
}
