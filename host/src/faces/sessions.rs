//! MCP sessions over HTTP (2025-11-25), capped: rmcp's in-memory session
//! manager, with a slot per session that is given back when the session's
//! service ends (the client's `DELETE`, or rmcp closing an idle session),
//! and the ended session's entry taken out of rmcp's map then, not left
//! behind. Past the cap a new session is refused with a clear error and
//! the open ones are unaffected. A session opened with an access token is
//! bound to its principal until it ends ([`CappedSessions::bind`]).
//!
//! With a shared store (`[sessions] redis`, [`SharedSessions`]) a session
//! opened on another replica is restored here on its first request, taking
//! a slot like a new one; its principal and its end are the store's.

use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{EventStore, ServerSseMessage};
use rmcp::transport::streamable_http_server::{RestoreOutcome, SessionId, SessionManager};
use rmcp::transport::{Transport, WorkerTransport};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::shared::SharedSessions;

/// rmcp's session manager with at most `max` sessions open.
pub struct CappedSessions {
    inner: Arc<LocalSessionManager>,
    slots: Arc<Semaphore>,
    max: usize,
    owners: Owners,
    shared: Option<Arc<SharedSessions>>,
    /// Cancelled when the server starts draining: the event streams end.
    draining: CancellationToken,
}

/// The principal each session was opened by, by session id.
type Owners = Arc<std::sync::Mutex<std::collections::HashMap<SessionId, String>>>;

impl CappedSessions {
    /// At most `max` sessions (at least one), shared through `shared` if
    /// given; their event streams (`GET /mcp`) end when `draining` is
    /// cancelled, since they would never end by themselves (a client
    /// opens another, on another replica). Responses still running go on.
    pub fn new(max: usize, shared: Option<Arc<SharedSessions>>, draining: CancellationToken) -> CappedSessions {
        let max = max.max(1);
        CappedSessions {
            inner: Arc::new(LocalSessionManager::default()),
            slots: Arc::new(Semaphore::new(max)),
            max,
            owners: Owners::default(),
            shared,
            draining,
        }
    }

    /// Session `id` was just opened (rmcp answered its `initialize`),
    /// by the principal `owner` (its key) if an access token opened it:
    /// a request on it from anyone else is refused, until it ends. With a
    /// shared store, the session and its binding are stored before this
    /// returns; if they could not be, the session is closed (unknown to
    /// the other replicas, or open to anyone there) and why is returned.
    pub async fn opened(&self, id: &str, owner: Option<String>) -> Result<(), String> {
        if let Some(shared) = &self.shared {
            let kept = match (shared.stored(id), &owner) {
                (Ok(()), Some(owner)) => shared.bind(id, owner).await,
                (kept, _) => kept,
            };
            if let Err(reason) = kept {
                // Its id is never answered; what the store kept of it goes too, if it can.
                let _ = self.inner.close_session(&SessionId::from(id)).await;
                let _ =
                    rmcp::transport::streamable_http_server::session::SessionStore::delete(shared.as_ref(), id).await;
                return Err(reason);
            }
        }
        if let Some(owner) = owner {
            self.remember(id, owner);
        }
        Ok(())
    }

    fn remember(&self, id: &str, owner: String) {
        let mut owners = self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Only a session still open is bound (its end removes the binding).
        if owners.len() < self.max {
            owners.insert(SessionId::from(id), owner);
        }
    }

    /// Whether a request on session `id` may go on, and the principal the
    /// session is bound to, if any. With a shared store, one round trip
    /// says whether the session is still open (one ended on another
    /// replica is closed here too, and rmcp answers 404) and whose it is;
    /// a session open elsewhere that this replica has no slot to restore
    /// is [`SessionsError::Full`], and a store that cannot answer is
    /// [`SessionsError::Shared`]: the request is not served unchecked.
    pub async fn check(&self, id: &str) -> Result<Option<String>, SessionsError> {
        let known = self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(id).cloned();
        let Some(shared) = &self.shared else { return Ok(known) };
        let session = SessionId::from(id);
        let here = self.inner.has_session(&session).await?;
        let stored = shared.check(id, here).await.map_err(SessionsError::Shared)?;
        if !stored.open {
            if here {
                self.inner.close_session(&session).await?;
            }
            return Ok(known);
        }
        if !here && self.full() {
            return Err(SessionsError::Full(self.max));
        }
        if let (None, Some(owner)) = (&known, &stored.owner) {
            self.remember(id, owner.clone());
        }
        Ok(known.or(stored.owner))
    }

    /// Whether every slot is taken (a new session would be refused).
    pub fn full(&self) -> bool {
        self.slots.available_permits() == 0
    }

    /// Sessions open now.
    pub fn open(&self) -> usize {
        self.max - self.slots.available_permits()
    }

    /// The most sessions open at once.
    pub fn max(&self) -> usize {
        self.max
    }
}

/// Why a session could not be served.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    /// Every slot is taken.
    #[error("{0} MCP sessions are open, the most this server keeps; end one (DELETE /mcp) or retry later")]
    Full(usize),
    /// rmcp's own.
    #[error(transparent)]
    Session(#[from] LocalSessionManagerError),
    /// The shared store cannot answer.
    #[error("{0}")]
    Shared(String),
}

/// A session's transport, holding its slot until the session's service
/// ends and drops it.
pub struct Counted {
    inner: WorkerTransport<LocalSessionWorker>,
    id: SessionId,
    sessions: Arc<LocalSessionManager>,
    owners: Owners,
    _slot: OwnedSemaphorePermit,
}

impl Drop for Counted {
    fn drop(&mut self) {
        // The session ended: its entry goes too (a DELETE took it already;
        // an idle session's would otherwise stay).
        self.owners.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.id);
        let (sessions, id) = (self.sessions.clone(), self.id.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { drop(sessions.sessions.write().await.remove(&id)) });
        }
    }
}

impl Transport<RoleServer> for Counted {
    type Error = <WorkerTransport<LocalSessionWorker> as Transport<RoleServer>>::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = std::result::Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = std::result::Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = Counted;

    async fn create_session(&self) -> Result<(SessionId, Counted), SessionsError> {
        let slot = self.slots.clone().try_acquire_owned().map_err(|_| SessionsError::Full(self.max))?;
        let (id, inner) = self.inner.create_session().await?;
        let owners = self.owners.clone();
        let transport = Counted { inner, id: id.clone(), sessions: self.inner.clone(), owners, _slot: slot };
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, SessionsError> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, SessionsError> {
        // Whether the shared store still has it was asked before
        // ([`CappedSessions::check`], on every request on a session).
        Ok(self.inner.has_session(id).await?)
    }

    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Counted>, SessionsError> {
        let slot = self.slots.clone().try_acquire_owned().map_err(|_| SessionsError::Full(self.max))?;
        Ok(match self.inner.restore_session(id.clone()).await? {
            RestoreOutcome::Restored(inner) => {
                let (sessions, owners) = (self.inner.clone(), self.owners.clone());
                RestoreOutcome::Restored(Counted { inner, id, sessions, owners, _slot: slot })
            }
            other => other_outcome(other),
        })
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), SessionsError> {
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionsError> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), SessionsError> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionsError> {
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(stream.take_until(self.draining.clone().cancelled_owned()))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionsError> {
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(stream.take_until(self.draining.clone().cancelled_owned()))
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// An outcome with no transport, as the capped manager's.
fn other_outcome<T, U>(outcome: RestoreOutcome<T>) -> RestoreOutcome<U> {
    match outcome {
        RestoreOutcome::AlreadyPresent => RestoreOutcome::AlreadyPresent,
        _ => RestoreOutcome::NotSupported,
    }
}
