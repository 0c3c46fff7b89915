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
//! and refreshes its expiry. An entry lives `idle_seconds`
//! after its last request. When Redis cannot answer, requests on sessions
//! are refused with a "retry" (HTTP 503), never served unchecked.
//!
//! SSE streams are not resumed on another replica: rmcp's event store is
//! not shared. A client whose stream ends reconnects, and the session
//! goes on.

use std::sync::Arc;

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
        let config = redis::aio::ConnectionManagerConfig::new().set_number_of_retries(2);
        let connect = || redis::aio::ConnectionManager::new_with_config(self.client.clone(), config);
        let made = self.connection.get_or_try_init(connect).await;
        made.cloned().map_err(|e| format!("{}: {}", self.source, failed(e)))
    }
}

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
}

impl SharedSessions {
    /// Sessions kept in the Redis `settings` name, if any (nothing is
    /// connected yet); `env` reads the password's variable.
    pub fn new(settings: &SessionsSettings, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<SharedSessions>> {
        Ok(Redis::new(settings, env)?.map(|redis| SharedSessions::on(Arc::new(redis))))
    }

    /// Sessions kept in `redis`.
    pub fn on(redis: Arc<Redis>) -> SharedSessions {
        SharedSessions { redis }
    }

    async fn connection(&self) -> std::result::Result<redis::aio::ConnectionManager, String> {
        self.redis.connection().await
    }

    /// What the store says of session `id`, in one round trip: whether
    /// it is still open (then its expiry starts again) and whose it is.
    pub async fn check(&self, id: &str) -> std::result::Result<Stored, String> {
        let mut connection = self.connection().await?;
        let idle = self.redis.idle_seconds as i64;
        let (owner, open, _): (Option<String>, bool, bool) = redis::pipe()
            .get(owner_key(id))
            .expire(state_key(id), idle)
            .expire(owner_key(id), idle)
            .query_async(&mut connection)
            .await
            .map_err(failed)?;
        Ok(Stored { open, owner })
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
        let mut connection = self.connection().await?;
        let text: Option<String> =
            redis::cmd("GET").arg(state_key(id)).query_async(&mut connection).await.map_err(failed)?;
        // An entry that does not read is no session (and is not trusted).
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    async fn store(&self, id: &str, state: &SessionState) -> std::result::Result<(), SessionStoreError> {
        let mut connection = self.connection().await?;
        let text = serde_json::to_string(state)?;
        let mut set = redis::cmd("SET");
        set.arg(state_key(id)).arg(text).arg("EX").arg(self.redis.idle_seconds);
        Ok(set.query_async::<()>(&mut connection).await.map_err(failed)?)
    }

    async fn delete(&self, id: &str) -> std::result::Result<(), SessionStoreError> {
        let mut connection = self.connection().await?;
        let mut del = redis::cmd("DEL");
        del.arg(state_key(id)).arg(owner_key(id));
        Ok(del.query_async::<()>(&mut connection).await.map_err(failed)?)
    }
}
