//! The session a request's calls run in: the face's own (its agent
//! profile) for a request without an access token, else the profile the
//! token's principal maps to, with every call held to the token's scopes.
//! Sessions per profile are opened once and kept; holding one to a
//! token's scopes is a copy of its policy.

use std::collections::HashMap;
use std::sync::Mutex;

use super::guard::Principal;
use crate::error::Result;
use crate::host::Host;
use crate::session::Session;

/// The sessions of one face, by the principal's profile.
pub struct ByPrincipal {
    host: Host,
    /// The face's own session (its `--agent`).
    default: Session,
    per_agent: Mutex<HashMap<String, Session>>,
}

impl ByPrincipal {
    /// Sessions of `host`, `default` the face's own.
    pub fn new(host: Host, default: Session) -> ByPrincipal {
        ByPrincipal { host, default, per_agent: Mutex::new(HashMap::new()) }
    }

    /// The face's own session.
    pub fn default_session(&self) -> &Session {
        &self.default
    }

    /// The principal's own session when what it is shown (its `tools/list`,
    /// its Tier 1) differs from the face's: a token mapped to another
    /// profile, or one whose profile hides what its scopes do not name.
    /// `None`: the face's own listing serves (and stays cached). An
    /// error when the principal's profile cannot be opened: never the
    /// face's own view in its place.
    pub fn listing(&self, principal: Option<&Principal>) -> Result<Option<Session>> {
        let Some(token) = principal.and_then(Principal::oauth) else { return Ok(None) };
        let session = self.of(principal)?;
        let policy = session.policy();
        let differs = policy.hide_unauthorized || token.agent.is_some() && token.agent != self.default.policy().agent;
        Ok(differs.then_some(session))
    }

    /// The session `principal`'s calls run in.
    pub fn of(&self, principal: Option<&Principal>) -> Result<Session> {
        let Some(token) = principal.and_then(Principal::oauth) else { return Ok(self.default.clone()) };
        let base = match &token.agent {
            None => self.default.clone(),
            Some(agent) => {
                let mut kept = self.per_agent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                match kept.get(agent) {
                    Some(session) => session.clone(),
                    None => {
                        let session = self.host.open_session(Some(agent))?;
                        kept.insert(agent.clone(), session.clone());
                        session
                    }
                }
            }
        };
        Ok(base.for_token(std::sync::Arc::new(token.clone())))
    }
}
