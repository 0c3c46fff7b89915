//! Resources configured in `quiver.toml` (databases, connector instances),
//! served as plugins of their own name through an adapter plugin.

use std::sync::Arc;

use super::snapshot::Catalog;
use crate::contract::Kind;
use crate::error::Error;
use crate::load::openapi::OpenApiConnector;
use crate::load::{ConnectorSettings, Origin, Plugin, SettingsResolver, stub};
use crate::sandbox::config::ConfigGrant;
use crate::sandbox::sql::{Database, SqlGrant};

use super::scan::Embedded;

/// A configured database, served by a database adapter under the
/// database's own name.
#[derive(Debug, Clone)]
pub struct DatabaseSource {
    /// The database.
    pub database: Arc<Database>,
    /// The adapter plugin that serves it; `None`: the generic adapter.
    pub adapter: Option<String>,
}

/// A configured connector instance: its settings and, for an `openapi`
/// section, the operations of its document it serves.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectorSource {
    /// Its resolved settings.
    pub settings: ConnectorSettings,
    /// Its document's operations; `None`: it runs a connector plugin.
    pub openapi: Option<OpenApiConnector>,
}
impl Catalog {
    /// Serve `source` under its name, through its adapter.
    pub(super) fn add_database(
        &mut self,
        source: &DatabaseSource,
        generic: Option<Embedded>,
        settings: &SettingsResolver,
        previous: Option<&Catalog>,
    ) {
        let name = source.database.name();
        let origin = format!("[databases.{name}]");
        let adapter = match &source.adapter {
            Some(adapter) => match self.plugins.get(adapter).filter(|p| p.stub().kind == Kind::Database) {
                Some(plugin) => (plugin.stub().clone(), plugin.origin().clone()),
                None => {
                    let error = Error::config(
                        origin.clone(),
                        format!("adapter `{adapter}` is not a database adapter plugin of this host"),
                    );
                    return self.refuse(origin, error);
                }
            },
            None => match generic {
                Some((file_name, bytes)) => match stub::read(bytes, file_name) {
                    Ok(stub) => (stub, Origin::Embedded { file_name, bytes }),
                    Err(error) => return self.refuse(origin, error),
                },
                None => {
                    let error = Error::config(
                        origin.clone(),
                        "no generic database adapter is built in; name one with `adapter`",
                    );
                    return self.refuse(origin, error);
                }
            },
        };
        let grant = SqlGrant::new(source.database.clone());
        let reused = previous
            .and_then(|p| p.plugins.get(name))
            .filter(|p| p.is_instance() && p.origin().same_as(&adapter.1) && p.settings().grants.sql == grant);
        if let Some(plugin) = reused {
            return self.insert(plugin.clone(), false);
        }
        match settings.resolve(name, None) {
            Ok(mut resolved) => {
                resolved.grants.sql = grant;
                self.insert(Arc::new(Plugin::instance(name, adapter.0, adapter.1, resolved)), false);
            }
            Err(error) => self.refuse(origin, error),
        }
    }

    /// Serve the connector plugin `connector.plugin` (or, for an OpenAPI
    /// document, the generic connector) as the instance's name, with the
    /// instance's HTTP grant, `config` values and access ceiling over the
    /// plugin's own settings.
    pub(super) fn add_connector(
        &mut self,
        source: &ConnectorSource,
        generic: Option<Embedded>,
        settings: &SettingsResolver,
        previous: Option<&Catalog>,
    ) {
        let connector = &source.settings;
        let name = connector.name.as_str();
        let origin = format!("[connectors.{name}]");
        if self.plugins.contains_key(name) {
            let error =
                Error::config(origin.clone(), format!("`{name}` is already the name of a plugin; rename the section"));
            return self.refuse(origin, error);
        }
        let (stub, plugin_origin, resolved, manifest) = match &source.openapi {
            Some(document) => {
                let Some((file_name, bytes)) = generic else {
                    let error = Error::config(origin.clone(), "no generic OpenAPI connector is built in");
                    return self.refuse(origin, error);
                };
                let mut resolved = match settings.resolve(name, None) {
                    Ok(resolved) => resolved,
                    Err(error) => return self.refuse(origin, error),
                };
                resolved.grants.config = ConfigGrant::new(document.plans().collect());
                let origin = Origin::Embedded { file_name, bytes };
                (document.stub(name), origin, resolved, Some(document))
            }
            None => {
                let plugin = self
                    .plugins
                    .get(&connector.plugin)
                    .filter(|p| p.stub().kind == Kind::Connector && !p.is_instance());
                let Some(plugin) = plugin else {
                    let error = Error::config(
                        origin.clone(),
                        format!("plugin `{}` is not a connector plugin of this host", connector.plugin),
                    );
                    return self.refuse(origin, error);
                };
                (plugin.stub().clone(), plugin.origin().clone(), plugin.settings().clone(), None)
            }
        };
        let resolved = connector.over(&resolved);
        let reused = previous.and_then(|p| p.plugins.get(name)).filter(|p| {
            p.is_instance() && p.origin().same_as(&plugin_origin) && *p.settings() == resolved && *p.stub() == stub
        });
        if let Some(plugin) = reused {
            return self.insert(plugin.clone(), false);
        }
        let mut plugin = Plugin::instance(name, stub, plugin_origin, resolved);
        if let Some(document) = manifest {
            plugin = plugin.with_manifest(document.manifest(name));
        }
        self.insert(Arc::new(plugin), false)
    }
}
