//! Who a call is made for, and the one rule of how high its access may
//! go on a resource: the lower of the resource's own ceiling (a
//! connector instance's `access`) and the caller's grant.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::auth::Principal;
use crate::auth::scopes::Grants;
use crate::catalog::{Catalog, ToolEntry};
use crate::contract::Access;
use crate::error::{Error, Result};

/// Who a call is made for: the agent, and the highest access it is
/// granted on each resource (a plugin instance, a database, an MCP server).
/// The seam refuses an action above the grant before anything runs, and
/// passes the grant down (a database adapter's statements are held to it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// The agent profile, if any.
    pub agent: Option<String>,
    /// Grants by resource name; `*` applies to every other resource.
    pub access: Arc<BTreeMap<String, Access>>,
    /// The access token's principal, when the call came with one (the
    /// HTTP face in OAuth mode): the grants above are held to its scopes,
    /// and a resource they do not name is out of reach.
    pub token: Option<Arc<Principal>>,
}

impl Caller {
    /// The operator itself (the library, the CLI): no agent, every resource
    /// at the level it is configured with.
    pub fn operator() -> Caller {
        Caller::default()
    }

    /// What the access token's scopes grant, when there is one.
    pub fn scopes(&self) -> Option<&Grants> {
        self.token.as_deref().map(|t| &*t.grants)
    }

    /// The highest access granted on `resource` by the profile, held to
    /// the token's scopes (which, granting nothing there, leave reading:
    /// [`permit`](Self::permit) refuses such a call before it runs).
    pub fn ceiling(&self, resource: &str) -> Access {
        let granted = self.access.get(resource).or_else(|| self.access.get("*")).copied().unwrap_or(Access::Admin);
        match self.scopes() {
            Some(scopes) => granted.min(scopes.level(resource).unwrap_or(Access::Read)),
            None => granted,
        }
    }

    /// The highest access `tool` may use on its resource: the
    /// [`ceiling`](Self::ceiling), raised to the tool's own level when the
    /// token grants that tool by name (and the profile allows it).
    pub fn ceiling_for(&self, tool: &ToolEntry) -> Access {
        let ceiling = self.ceiling(&tool.origin);
        match self.scopes() {
            Some(scopes) => {
                let profile = self.access.get(&tool.origin).or_else(|| self.access.get("*")).copied();
                let by_scope = scopes.level_for(&tool.name, &tool.origin, tool.access).unwrap_or(Access::Read);
                ceiling.max(by_scope.min(profile.unwrap_or(Access::Admin)))
            }
            None => ceiling,
        }
    }

    /// The highest access this caller may use on `resource` of `catalog`:
    /// its grant, held to the resource's own ceiling.
    pub fn allowed_on(&self, catalog: &Catalog, resource: &str) -> Access {
        let own = catalog.get(resource).and_then(|p| p.settings().access).unwrap_or(Access::Admin);
        self.ceiling(resource).min(own)
    }

    /// Whether this caller may run `tool`: the resource's own ceiling
    /// first (whoever calls), then the caller's grant; each refusal says
    /// which one it was.
    pub fn permit(&self, catalog: &Catalog, tool: &ToolEntry) -> Result<()> {
        if let Some(allowed) = catalog.get(&tool.origin).and_then(|p| p.settings().access)
            && tool.access > allowed
        {
            return Err(Error::AboveCeiling {
                resource: tool.origin.clone(),
                action: tool.action.clone(),
                needed: tool.access,
                allowed,
            });
        }
        if let Some(scopes) = self.scopes()
            && !scopes.allows(&tool.name, &tool.origin, tool.access)
        {
            return Err(Error::OutOfScope {
                resource: tool.origin.clone(),
                action: tool.action.clone(),
                scope: Grants::needed(&tool.origin, tool.access),
            });
        }
        let granted = self.access.get(&tool.origin).or_else(|| self.access.get("*")).copied().unwrap_or(Access::Admin);
        if tool.access > granted {
            return Err(Error::Denied {
                resource: tool.origin.clone(),
                action: tool.action.clone(),
                needed: tool.access,
                granted,
                agent: self.agent.clone(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_names_resources_and_a_star_covers_the_rest() {
        let access = [("db".to_owned(), Access::Write), ("*".to_owned(), Access::Read)].into();
        let caller = Caller { agent: Some("a".into()), access: Arc::new(access), token: None };
        assert_eq!(caller.ceiling("db"), Access::Write);
        assert_eq!(caller.ceiling("other"), Access::Read);
        assert_eq!(Caller::operator().ceiling("any"), Access::Admin);
        // Without such a resource in the catalog, only the grant holds.
        assert_eq!(caller.allowed_on(&Catalog::default(), "db"), Access::Write);
    }

    #[test]
    fn a_call_above_the_grant_is_denied_naming_the_agent() {
        let caller =
            Caller { agent: Some("reader".into()), access: Arc::new([("*".into(), Access::Read)].into()), token: None };
        let tool = ToolEntry {
            name: "db__query".into(),
            origin: "db".into(),
            action: "query".into(),
            category: crate::catalog::Category::Database,
            summary: String::new(),
            access: Access::Write,
        };
        let error = caller.permit(&Catalog::default(), &tool).unwrap_err();
        assert!(matches!(&error, Error::Denied { agent: Some(a), .. } if a == "reader"), "{error}");
        assert!(Caller::operator().permit(&Catalog::default(), &tool).is_ok());
    }

    #[test]
    fn a_token_holds_every_grant_to_its_scopes() {
        let grants = Arc::new(Grants::from_scopes(["quiver:db:read", "quiver:tool:notes__add"]));
        let token = Principal { subject: "s".into(), client_id: None, agent: None, grants, expires: u64::MAX };
        let caller = Caller { token: Some(Arc::new(token)), ..Caller::operator() };
        let tool = |name: &str, origin: &str, access| ToolEntry {
            name: name.into(),
            origin: origin.into(),
            action: "a".into(),
            category: crate::catalog::Category::Builtin,
            summary: String::new(),
            access,
        };
        let catalog = Catalog::default();
        assert!(caller.permit(&catalog, &tool("db__query", "db", Access::Read)).is_ok());
        let error = caller.permit(&catalog, &tool("db__insert", "db", Access::Write)).unwrap_err();
        assert!(matches!(&error, Error::OutOfScope { scope, .. } if scope == "quiver:db:write"), "{error}");
        assert!(caller.permit(&catalog, &tool("other__x", "other", Access::Read)).is_err());
        assert!(caller.permit(&catalog, &tool("notes__add", "notes", Access::Write)).is_ok());
        assert_eq!(caller.ceiling("db"), Access::Read);
        assert_eq!(caller.ceiling_for(&tool("notes__add", "notes", Access::Write)), Access::Write);
        assert_eq!(caller.ceiling_for(&tool("db__query", "db", Access::Read)), Access::Read);
    }
}
