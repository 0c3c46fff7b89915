//! Where the dashboard's sign-ins are kept: in this process, or, for
//! replicas with `[sessions] redis`, in the Redis they share. There a
//! browser signed in on one replica is signed in on every one, a sign-out
//! on any ends it on all, and a sign-in begun at the issuer through one
//! replica may come back through another (its PKCE verifier is kept by
//! `state`, and spent once).
//!
//! In Redis a sign-in is `quiver:sign-in:HASH` (HASH: the SHA-256 of the
//! cookie's value, so that whoever reads Redis holds no cookie), its CSRF
//! token and principal as JSON, expiring with the sign-in; a sign-in under
//! way is `quiver:sign-in-state:HASH` (of its `state`), the verifier,
//! taken with `GETDEL`. The principal is kept as its token's claims and
//! scopes, and its grants are read from those scopes again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use zeroize::Zeroizing;

use crate::auth;
use crate::faces::shared::{Redis, failed};

/// Sign-ins kept at once in one process; past it the oldest is ended.
const MAX: usize = 1024;

/// Sign-ins under way kept at once in one process; past it the oldest goes.
const MAX_PENDING: usize = 256;

/// One sign-in, as kept.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) csrf: String,
    pub(super) principal: Option<auth::Principal>,
}

/// Where sign-ins are kept.
pub(super) enum Kept {
    Local(Mutex<Local>),
    Shared(Arc<Redis>),
}

/// Sign-ins kept in this process.
#[derive(Default)]
pub(super) struct Local {
    sign_ins: HashMap<String, (Entry, Instant)>,
    pending: HashMap<String, (Zeroizing<String>, Instant)>,
}

/// A sign-in as Redis holds it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    csrf: String,
    principal: Option<StoredPrincipal>,
}

/// A principal as Redis holds it: what its token said.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredPrincipal {
    subject: String,
    client_id: Option<String>,
    agent: Option<String>,
    scopes: Vec<String>,
    expires: u64,
}

impl From<&auth::Principal> for StoredPrincipal {
    fn from(p: &auth::Principal) -> StoredPrincipal {
        let scopes = p.grants.sent().to_vec();
        StoredPrincipal {
            subject: p.subject.clone(),
            client_id: p.client_id.clone(),
            agent: p.agent.clone(),
            scopes,
            expires: p.expires,
        }
    }
}

impl From<StoredPrincipal> for auth::Principal {
    fn from(p: StoredPrincipal) -> auth::Principal {
        let grants = Arc::new(auth::scopes::Grants::from_scopes(p.scopes.iter().map(String::as_str)));
        auth::Principal { subject: p.subject, client_id: p.client_id, agent: p.agent, grants, expires: p.expires }
    }
}

fn hashed(prefix: &str, secret: &str) -> String {
    format!("{prefix}{}", hex::encode(ring::digest::digest(&ring::digest::SHA256, secret.as_bytes())))
}

fn sign_in_key(id: &str) -> String {
    hashed("quiver:sign-in:", id)
}

fn state_key(state: &str) -> String {
    hashed("quiver:sign-in-state:", state)
}

impl Local {
    fn put(&mut self, id: &str, entry: Entry, lasts: Duration) {
        let now = Instant::now();
        self.sign_ins.retain(|_, (_, until)| *until > now);
        if self.sign_ins.len() >= MAX
            && let Some(oldest) = self.sign_ins.iter().min_by_key(|(_, (_, u))| *u).map(|(id, _)| id.clone())
        {
            self.sign_ins.remove(&oldest);
        }
        self.sign_ins.insert(id.to_owned(), (entry, now + lasts));
    }

    fn get(&self, id: &str) -> Option<(Entry, Instant)> {
        self.sign_ins.get(id).filter(|(_, until)| *until > Instant::now()).cloned()
    }

    fn begin(&mut self, state: &str, verifier: &str, lasts: Duration) {
        let now = Instant::now();
        self.pending.retain(|_, (_, until)| *until > now);
        if self.pending.len() >= MAX_PENDING
            && let Some(oldest) = self.pending.iter().min_by_key(|(_, (_, u))| *u).map(|(s, _)| s.clone())
        {
            self.pending.remove(&oldest);
        }
        self.pending.insert(state.to_owned(), (Zeroizing::new(verifier.to_owned()), now + lasts));
    }

    fn take(&mut self, state: &str) -> Option<Zeroizing<String>> {
        self.pending.remove(state).filter(|(_, until)| *until > Instant::now()).map(|(verifier, _)| verifier)
    }
}

fn lock(local: &Mutex<Local>) -> std::sync::MutexGuard<'_, Local> {
    local.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Kept {
    /// Keep sign-in `id` for `lasts`.
    pub(super) async fn put(&self, id: &str, entry: Entry, lasts: Duration) -> Result<(), String> {
        let redis = match self {
            Kept::Local(local) => {
                lock(local).put(id, entry, lasts);
                return Ok(());
            }
            Kept::Shared(redis) => redis,
        };
        let stored = Stored { csrf: entry.csrf, principal: entry.principal.as_ref().map(StoredPrincipal::from) };
        let text = serde_json::to_string(&stored).map_err(|e| e.to_string())?;
        let mut connection = redis.connection().await?;
        let mut set = redis::cmd("SET");
        set.arg(sign_in_key(id)).arg(text).arg("PX").arg(millis(lasts));
        set.query_async::<()>(&mut connection).await.map_err(failed)
    }

    /// Sign-in `id` and when it ends, if it is still on.
    pub(super) async fn get(&self, id: &str) -> Result<Option<(Entry, Instant)>, String> {
        let redis = match self {
            Kept::Local(local) => return Ok(lock(local).get(id)),
            Kept::Shared(redis) => redis,
        };
        let mut connection = redis.connection().await?;
        let key = sign_in_key(id);
        let (text, left): (Option<String>, i64) =
            redis::pipe().get(&key).pttl(&key).query_async(&mut connection).await.map_err(failed)?;
        // An entry that does not read is no sign-in (and is not trusted).
        let Some(stored) = text.and_then(|t| serde_json::from_str::<Stored>(&t).ok()) else { return Ok(None) };
        let until = Instant::now() + Duration::from_millis(u64::try_from(left).unwrap_or(0));
        let entry = Entry { csrf: stored.csrf, principal: stored.principal.map(auth::Principal::from) };
        Ok(Some((entry, until)))
    }

    /// End sign-in `id`.
    pub(super) async fn remove(&self, id: &str) -> Result<(), String> {
        let redis = match self {
            Kept::Local(local) => {
                lock(local).sign_ins.remove(id);
                return Ok(());
            }
            Kept::Shared(redis) => redis,
        };
        let mut connection = redis.connection().await?;
        redis::cmd("DEL").arg(sign_in_key(id)).query_async::<()>(&mut connection).await.map_err(failed)
    }

    /// Keep the PKCE `verifier` of the sign-in begun with `state`, for `lasts`.
    pub(super) async fn begin(&self, state: &str, verifier: &str, lasts: Duration) -> Result<(), String> {
        let redis = match self {
            Kept::Local(local) => {
                lock(local).begin(state, verifier, lasts);
                return Ok(());
            }
            Kept::Shared(redis) => redis,
        };
        let mut connection = redis.connection().await?;
        let mut set = redis::cmd("SET");
        set.arg(state_key(state)).arg(verifier).arg("PX").arg(millis(lasts));
        set.query_async::<()>(&mut connection).await.map_err(failed)
    }

    /// The verifier of the sign-in begun with `state`, spent: a second
    /// take of the same `state` finds nothing.
    pub(super) async fn take(&self, state: &str) -> Result<Option<Zeroizing<String>>, String> {
        let redis = match self {
            Kept::Local(local) => return Ok(lock(local).take(state)),
            Kept::Shared(redis) => redis,
        };
        let mut connection = redis.connection().await?;
        let taken: Option<String> =
            redis::cmd("GETDEL").arg(state_key(state)).query_async(&mut connection).await.map_err(failed)?;
        Ok(taken.map(Zeroizing::new))
    }
}

fn millis(lasts: Duration) -> u64 {
    u64::try_from(lasts.as_millis()).unwrap_or(u64::MAX).max(1)
}
