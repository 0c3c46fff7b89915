//! MCP sessions shared by replicas (2025-11-25 clients behind a load
//! balancer), kept in Redis (`[sessions] redis`).
//!
//! A session is what its `initialize` said, and, when an access token
//! opened it, the principal it is bound to. Quiver keeps nothing else per
//! session: every call runs in the profile of the face or of the token's
//! principal, never in state a session built up. So a request on any
//! replica is served as on the one that opened the session. rmcp restores
//! the session there from its `initialize` parameters (its `SessionStore`
//! hook), after [`SharedSessions::check`] has held the request to the
//! session's principal.
//!
//! Redis is the truth: a session `DELETE`d on one replica is gone on every
//! one, even where it was open in memory: [`SharedSessions::check`] asks on
//! each request, in the one round trip that reads the session's principal
//! and refreshes its expiry, and, for a session not open here, reads what
//! rmcp restores it from (so a restore is never a second round trip that
//! could fail after the first answered). An entry lives `idle_seconds`
//! after its last request. When Redis cannot answer, requests on sessions
//! are refused with a "retry" (HTTP 503), never served unchecked; so is an
//! `initialize` whose session could not be stored (rmcp would answer it,
//! and the session would be unknown to every other replica).
//!
//! SSE streams are not resumed on another replica: rmcp's event store is
//! not shared. A client whose stream ends reconnects, and the session
//! goes on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError};
use tokio::sync::OnceCell;

use crate::config::SessionsSettings;
use crate::error::{Error, Result};

/// What the store holds of a session.
#[derive(Debug)]
pub struct Stored {
    /// Whether it is still open (no replica ended it, nor did it expire).
    pub open: bool,
    /// The key of the principal it is bound to, if an access token opened it.
    pub owner: Option<String>,
}

/// The Redis the replicas share (`[sessions] redis`): MCP sessions here,
/// and the dashboard's sign-ins ([`SignIns`](super::dashboard::signin::SignIns)).
pub struct Redis {
    client: redis::Client,
    /// Connected at first use, and kept (it reconnects by itself).
    connection: OnceCell<redis::aio::ConnectionManager>,
    idle_seconds: u64,
    /// Where the settings came from, as errors name it.
    source: String,
}

impl Redis {
    /// The Redis `settings` name, if any (nothing is connected yet); `env`
    /// reads the password's variable.
    pub fn new(settings: &SessionsSettings, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Redis>> {
        let Some(url) = &settings.redis else { return Ok(None) };
        let source = "[sessions] redis".to_owned();
        let mut info: redis::ConnectionInfo = redis::IntoConnectionInfo::into_connection_info(url.as_str())
            .map_err(|e| Error::config(&source, format!("not a Redis URL (redis://HOST:PORT/DB): {}", failed(e))))?;
        if !matches!(info.addr(), redis::ConnectionAddr::Tcp(..)) {
            return Err(Error::config(&source, "only redis:// (plain TCP) is read; put TLS in front with a sidecar"));
        }
        if info.redis_settings().password().is_some() {
            return Err(Error::config(&source, "a password in the URL: name its variable in `password_env` instead"));
        }
        if let Some(var) = &settings.password_env {
            let password = env(var)
                .filter(|p| !p.is_empty())
                .ok_or_else(|| Error::config("[sessions] password_env", format!("${var} is not set")))?;
            let redis_settings = info.redis_settings().clone().set_password(password);
            info = info.set_redis_settings(redis_settings);
        }
        let client = redis::Client::open(info).map_err(|e| Error::config(&source, failed(e)))?;
        let idle_seconds = settings.idle_seconds.unwrap_or(crate::config::DEFAULT_SESSION_IDLE_SECONDS).max(1);
        Ok(Some(Redis { client, connection: OnceCell::new(), idle_seconds, source }))
    }

    /// The connection (made at first use), or why there is none.
    pub(crate) async fn connection(&self) -> std::result::Result<redis::aio::ConnectionManager, String> {
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_number_of_retries(2)
            .set_connection_timeout(Some(REDIS_ANSWER))
            .set_response_timeout(Some(REDIS_ANSWER));
        let connect = || redis::aio::ConnectionManager::new_with_config(self.client.clone(), config);
        let made = self.connection.get_or_try_init(connect).await;
        made.cloned().map_err(|e| format!("{}: {}", self.source, failed(e)))
    }
}

/// How long an answer from Redis is awaited before the request is a
/// "retry". The redis crate's 500 ms turned a busy replica (one whose
/// tasks wait for a core) into a storm of 503s, each costing its client a
/// second, though Redis had answered in time.
const REDIS_ANSWER: Duration = Duration::from_secs(2);

fn state_key(id: &str) -> String {
    format!("quiver:mcp-session:{id}")
}

fn owner_key(id: &str) -> String {
    format!("quiver:mcp-session-owner:{id}")
}

/// A Redis error, as it may be shown (its text names no secret: the
/// password is never in the URL).
pub(crate) fn failed(error: redis::RedisError) -> String {
    crate::contract::sanitize_cut(&format!("Redis: {error}"), crate::contract::Shape::Line, 200)
}

/// Sessions kept in Redis.
pub struct SharedSessions {
    redis: Arc<Redis>,
    /// What [`SharedSessions::check`] read of sessions not open here, for
    /// rmcp's restore ([`SessionStore::load`]) right after it.
    read: Mutex<HashMap<String, (Instant, SessionState)>>,
    /// Sessions rmcp opened whose state could not be stored, and why,
    /// until [`SharedSessions::stored`] is asked.
    unstored: Mutex<HashMap<String, String>>,
}

/// How long what a check read is kept for the restore that follows it.
const READ_KEPT: Duration = Duration::from_secs(10);

/// The most entries kept in either map above. Each is taken at once by
/// the request that made it; past the bound a restore reads again, and the
/// stores not yet reported are forgotten.
const KEPT_MOST: usize = 4096;

impl SharedSessions {
    /// Sessions kept in the Redis `settings` name, if any (nothing is
    /// connected yet); `env` reads the password's variable.
    pub fn new(settings: &SessionsSettings, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<SharedSessions>> {
        Ok(Redis::new(settings, env)?.map(|redis| SharedSessions::on(Arc::new(redis))))
    }

    /// Sessions kept in `redis`.
    pub fn on(redis: Arc<Redis>) -> SharedSessions {
        SharedSessions { redis, read: Mutex::default(), unstored: Mutex::default() }
    }

    async fn connection(&self) -> std::result::Result<redis::aio::ConnectionManager, String> {
        self.redis.connection().await
    }

    /// What the store says of session `id`, in one round trip: whether
    /// it is still open (then its expiry starts again) and whose it is.
    /// A session not open `here` is read whole, for its restore.
    pub async fn check(&self, id: &str, here: bool) -> std::result::Result<Stored, String> {
        let mut connection = self.connection().await?;
        let idle = redis::Expiry::EX(self.redis.idle_seconds);
        let mut pipe = redis::pipe();
        pipe.get_ex(owner_key(id), idle.clone());
        if here {
            let (owner, open): (Option<String>, bool) = pipe
                .expire(state_key(id), self.redis.idle_seconds as i64)
                .query_async(&mut connection)
                .await
                .map_err(failed)?;
            return Ok(Stored { open, owner });
        }
        let (owner, text): (Option<String>, Option<String>) =
            pipe.get_ex(state_key(id), idle).query_async(&mut connection).await.map_err(failed)?;
        // An entry that does not read is no session (and is not trusted).
        let Some(state) = text.and_then(|t| serde_json::from_str::<SessionState>(&t).ok()) else {
            return Ok(Stored { open: false, owner });
        };
        let mut read = self.read.lock().unwrap_or_else(PoisonError::into_inner);
        read.retain(|_, (at, _)| at.elapsed() < READ_KEPT);
        if read.len() < KEPT_MOST {
            read.insert(id.to_owned(), (Instant::now(), state));
        }
        Ok(Stored { open: true, owner })
    }

    /// Whether rmcp stored session `id` when it opened it; if not, why.
    pub fn stored(&self, id: &str) -> std::result::Result<(), String> {
        match self.unstored.lock().unwrap_or_else(PoisonError::into_inner).remove(id) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    /// Bind session `id` to the principal `owner`.
    pub async fn bind(&self, id: &str, owner: &str) -> std::result::Result<(), String> {
        let mut connection = self.connection().await?;
        let mut set = redis::cmd("SET");
        set.arg(owner_key(id)).arg(owner).arg("EX").arg(self.redis.idle_seconds);
        set.query_async::<()>(&mut connection).await.map_err(failed)
    }
}

#[async_trait::async_trait]
impl SessionStore for SharedSessions {
    async fn load(&self, id: &str) -> std::result::Result<Option<SessionState>, SessionStoreError> {
        let read = self.read.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        if let Some((at, state)) = read
            && at.elapsed() < READ_KEPT
        {
            return Ok(Some(state));
        }
        let mut connection = self.connection().await?;
        let text: Option<String> =
            redis::cmd("GET").arg(state_key(id)).query_async(&mut connection).await.map_err(failed)?;
        // An entry that does not read is no session (and is not trusted).
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    async fn store(&self, id: &str, state: &SessionState) -> std::result::Result<(), SessionStoreError> {
        let text = serde_json::to_string(state)?;
        let stored = async {
            let mut connection = self.connection().await?;
            let mut set = redis::cmd("SET");
            set.arg(state_key(id)).arg(text).arg("EX").arg(self.redis.idle_seconds);
            set.query_async::<()>(&mut connection).await.map_err(failed)
        };
        // rmcp answers the `initialize` whatever this returns: the HTTP
        // face asks [`SharedSessions::stored`] before it lets the answer go.
        stored.await.inspect_err(|reason| {
            let mut unstored = self.unstored.lock().unwrap_or_else(PoisonError::into_inner);
            if unstored.len() >= KEPT_MOST {
                unstored.clear();
            }
            unstored.insert(id.to_owned(), reason.clone());
        })?;
        Ok(())
    }

    async fn delete(&self, id: &str) -> std::result::Result<(), SessionStoreError> {
        let mut connection = self.connection().await?;
        let mut del = redis::cmd("DEL");
        del.arg(state_key(id)).arg(owner_key(id));
        Ok(del.query_async::<()>(&mut connection).await.map_err(failed)?)
    }
}
