//! Resources as search documents: a database, a connector instance, a live
//! MCP server, matched by what is known of it without connecting,
//! compiling or spawning anything (its configured description or its
//! listing's purpose, its tables as the host last read them), so that
//! "top selling artists" finds the database that holds them. A hit on a
//! resource is reached through its meta-tool; it unlocks nothing.

use crate::catalog::{Catalog, Category};
use crate::contract::{Kind, one_line};
use crate::sandbox::sql::TableNames;

use super::document::{Document, Entry};

/// Table names a database document holds at most.
const INDEXED_TABLES: usize = 200;

impl Document {
    /// A resource: `name`, of `category`, with its one line and what else
    /// it is known by (its tables).
    pub fn of_resource(name: &str, category: Category, description: &str, holds: &[String]) -> Document {
        let holds = holds.iter().take(INDEXED_TABLES).map(String::as_str).collect::<Vec<_>>().join(" ");
        let entry = Entry {
            name: name.to_owned(),
            category,
            origin: name.to_owned(),
            summary: one_line(description, crate::catalog::SUMMARY_CHARS),
            resource: true,
            kin: super::document::kin_of(&["own", name]),
        };
        Document {
            entry,
            lexical: format!("{name} {name} {description} {holds}"),
            semantic: format!("{name}. {description} {holds}"),
        }
    }
}

/// The documents of `catalog`'s resources: its connector and database
/// instances, and the live MCP servers that say what they are for (a saved
/// list, or a server without a purpose, is known by its tools alone).
pub(super) fn documents(catalog: &Catalog) -> Vec<Document> {
    let mut documents = Vec::new();
    for plugin in catalog.plugins_of(Kind::Connector) {
        documents.push(Document::of_resource(plugin.name(), Category::Connector, &plugin.stub().description, &[]));
    }
    for plugin in catalog.plugins_of(Kind::Database) {
        let (description, tables) = match plugin.settings().grants.sql.database() {
            Some(database) => {
                let description = database.settings().description.clone();
                let tables = match database.table_names() {
                    TableNames::Read(names) => names,
                    TableNames::NotRead | TableNames::Failed(_) => Vec::new(),
                };
                (description.unwrap_or_else(|| plugin.stub().description.clone()), tables)
            }
            None => (plugin.stub().description.clone(), Vec::new()),
        };
        documents.push(Document::of_resource(plugin.name(), Category::Database, &description, &tables));
    }
    for server in catalog.mcp_servers().filter(|s| s.live) {
        if let Some(purpose) = server.purpose.as_deref().filter(|p| !p.trim().is_empty()) {
            documents.push(Document::of_resource(&server.name, Category::Mcp, purpose, &[]));
        }
    }
    documents
}
