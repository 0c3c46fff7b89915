//! An OpenAPI document as a connector: the API read, the operations
//! selected, and the stub and manifest they become.

use super::operation::{Operation, squeezed};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

use sha2::{Digest, Sha256};

use crate::contract::{Access, Kind, MAX_SUMMARY_CHARS, Shape, Stub, StubAction, one_line, sanitize};
use crate::error::{Error, Result};
use crate::load::manifest::{ActionSpec, Manifest, SharedSchema};

/// A parsed document.
#[derive(Debug)]
pub struct Api {
    /// `info.title`.
    pub title: String,
    /// `info.version`.
    pub version: String,
    /// One line on what the API is for.
    pub summary: String,
    /// Every operation, in the document's order.
    pub operations: Vec<Operation>,
    pub(super) schemes: BTreeMap<String, oas3::spec::SecurityScheme>,
    digest: [u8; 32],
}

/// Which operations an instance serves, and at which level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// Only operations with one of these tags (empty: all).
    pub tags: Vec<String>,
    /// No operation with one of these tags.
    pub exclude_tags: Vec<String>,
    /// Only these operations, by `operationId` or action name (empty: all).
    pub operations: Vec<String>,
    /// Not these operations.
    pub exclude_operations: Vec<String>,
    /// Levels that replace the method's, by `operationId` or action name.
    pub access: BTreeMap<String, Access>,
}

/// One connector instance of a document: the operations it serves.
#[derive(Debug, Clone)]
pub struct OpenApiConnector {
    api: Arc<Api>,
    /// Index into `api.operations`, with its level.
    selected: Vec<(usize, Access)>,
}

impl PartialEq for OpenApiConnector {
    fn eq(&self, other: &Self) -> bool {
        self.api.digest == other.api.digest && self.selected == other.selected
    }
}

/// Documents parsed so far, by content digest.
static PARSED: Mutex<Option<HashMap<[u8; 32], Weak<Api>>>> = Mutex::new(None);

impl Api {
    /// Read and parse the document at `path` (JSON, or YAML when it is
    /// not JSON); the same content parsed before is not parsed again.
    pub fn open(path: &Path) -> Result<Arc<Api>> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Io { path: path.display().to_string(), message: e.to_string() })?;
        let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        let mut parsed = PARSED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let parsed = parsed.get_or_insert_with(HashMap::new);
        if let Some(api) = parsed.get(&digest).and_then(Weak::upgrade) {
            return Ok(api);
        }
        let api = Arc::new(Api::parse(&text, &path.display().to_string())?);
        parsed.retain(|_, api| api.strong_count() > 0);
        parsed.insert(digest, Arc::downgrade(&api));
        Ok(api)
    }

    /// Parse a document; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Api> {
        let invalid = |reason: String| Error::config(origin, format!("not an OpenAPI 3.0 or 3.1 document: {reason}"));
        let mut value: serde_json::Value = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?
        } else {
            serde_saphyr::from_str(text).map_err(|e| invalid(e.to_string()))?
        };
        match value.get("openapi").and_then(serde_json::Value::as_str) {
            // 3.1 documents written with 3.0 habits are common: both are read
            // the same way.
            Some(version) if version.starts_with("3.0") || version.starts_with("3.1") => {
                super::schema::upgrade_3_0(&mut value);
            }
            Some(version) => return Err(invalid(format!("`openapi: {version}`"))),
            None => return Err(invalid("it has no `openapi` version field".into())),
        }
        let spec: oas3::Spec = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        // The stub is built, not read, but its version follows the rule a
        // read stub's does (`quiver list` shows it as it is).
        if let Some(problem) = quiver_contract::version_problem(&spec.info.version) {
            return Err(Error::config(origin, format!("`info.version`: {problem}, as a plugin's version")));
        }
        let definitions = super::schema::Definitions::new(&spec);
        let refs = super::refs::Refs { spec: &spec, origin };
        let mut names = super::names::Names::default();
        let mut operations = Vec::new();
        for (path, item) in spec.paths.iter().flatten() {
            for (method, op) in item.methods() {
                let name = names.of(op.operation_id.as_deref(), method.as_str(), path);
                let source = super::operation::Source {
                    refs,
                    definitions: &definitions,
                    path,
                    method: &method,
                    op,
                    shared: &item.parameters,
                };
                operations.push(source.operation(name)?);
            }
        }
        if operations.is_empty() {
            return Err(invalid("it has no operations".into()));
        }
        let summary = [&spec.info.summary, &spec.info.description]
            .into_iter()
            .flatten()
            .map(|text| one_line(&squeezed(text), MAX_SUMMARY_CHARS))
            .find(|line| !line.is_empty())
            .unwrap_or_default();
        let mut schemes = BTreeMap::new();
        for (name, scheme) in spec.components.iter().flat_map(|c| &c.security_schemes) {
            if let super::refs::Found::Object(scheme) = refs.follow(scheme)? {
                schemes.insert(name.clone(), scheme.clone());
            }
        }
        Ok(Api {
            title: sanitize(spec.info.title.trim(), Shape::Line).into_owned(),
            version: spec.info.version.clone(),
            summary,
            operations,
            schemes,
            digest: Sha256::digest(text.as_bytes()).into(),
        })
    }

    /// The operations `selection` picks, for the section named `section`.
    /// A name or tag the document does not have is an error: a typo must
    /// not silently serve everything, or nothing.
    pub fn select(self: &Arc<Api>, selection: &Selection, section: &str) -> Result<OpenApiConnector> {
        let named = |op: &Operation, list: &[String]| {
            list.iter().any(|n| *n == op.name || op.operation_id.as_deref() == Some(n.as_str()))
        };
        let tagged = |op: &Operation, tags: &[String]| op.tags.iter().any(|t| tags.contains(t));
        let names = selection.operations.iter().chain(&selection.exclude_operations).chain(selection.access.keys());
        for name in names {
            if !self.operations.iter().any(|op| named(op, std::slice::from_ref(name))) {
                return Err(Error::config(section, format!("the document has no operation `{name}`")));
            }
        }
        for tag in selection.tags.iter().chain(&selection.exclude_tags) {
            if !self.operations.iter().any(|op| op.tags.contains(tag)) {
                return Err(Error::config(section, format!("no operation of the document has the tag `{tag}`")));
            }
        }
        let selected: Vec<(usize, Access)> = self
            .operations
            .iter()
            .enumerate()
            .filter(|(_, op)| selection.tags.is_empty() || tagged(op, &selection.tags))
            .filter(|(_, op)| !tagged(op, &selection.exclude_tags))
            .filter(|(_, op)| selection.operations.is_empty() || named(op, &selection.operations))
            .filter(|(_, op)| !named(op, &selection.exclude_operations))
            .map(|(i, op)| {
                let level = selection
                    .access
                    .iter()
                    .find(|(name, _)| named(op, std::slice::from_ref(name)))
                    .map_or(op.access, |(_, level)| *level);
                (i, level)
            })
            .collect();
        if selected.is_empty() {
            return Err(Error::config(section, "the selection leaves no operation of the document"));
        }
        Ok(OpenApiConnector { api: self.clone(), selected })
    }
}

impl OpenApiConnector {
    /// The document.
    pub fn api(&self) -> &Arc<Api> {
        &self.api
    }

    /// The operations served, with their levels.
    pub fn operations(&self) -> impl Iterator<Item = (&Operation, Access)> {
        self.selected.iter().map(|(i, level)| (&self.api.operations[*i], *level))
    }

    /// The header parameters of the operations served, by wire name (the
    /// host's own were left out when the document was read): the headers
    /// this connector's guest may set besides the standard ones.
    pub fn header_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .operations()
            .flat_map(|(op, _)| op.plan.params.iter())
            .filter(|p| p.location == quiver_contract::openapi::ParamIn::Header)
            .map(|p| p.name.to_ascii_lowercase())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The one line shown in Tier 1: the title, then the document's own
    /// summary.
    fn description(&self) -> String {
        let (title, summary) = (&self.api.title, &self.api.summary);
        let line = if summary.is_empty() || summary == title {
            title.clone()
        } else if title.is_empty() {
            summary.clone()
        } else {
            format!("{title}: {summary}")
        };
        let line = one_line(&line, MAX_SUMMARY_CHARS);
        // A one-line description may not be empty.
        if line.is_empty() { "An API described by an OpenAPI document".into() } else { line }
    }

    /// The Tier-1 stub of the instance `name`. It is built here, never read
    /// from a component, so it may list more actions than a plugin may
    /// declare (a large API is still one line in Tier 1).
    pub fn stub(&self, name: &str) -> Stub {
        let mut stub = Stub::new(name, &self.api.version, Kind::Connector, &self.description());
        stub.actions = self
            .operations()
            .map(|(op, access)| StubAction {
                name: op.name.clone(),
                summary: crate::contract::summary_of(&op.description),
                access,
            })
            .collect();
        stub
    }

    /// The Tier-2 manifest of the instance `name`.
    pub fn manifest(&self, name: &str) -> Manifest {
        let stub = self.stub(name);
        Manifest {
            name: stub.name,
            version: stub.version,
            kind: Kind::Connector,
            description: stub.description,
            categories: Vec::new(),
            actions: self
                .operations()
                .map(|(op, access)| {
                    ActionSpec::from_document(
                        op.name.clone(),
                        op.description.clone(),
                        Arc::new(op.input_schema.clone()),
                        op.output_schema.clone().map(|s| Arc::new(s) as Arc<dyn SharedSchema>),
                        access,
                    )
                })
                .collect(),
        }
    }

    /// The `config` entries the generic connector reads: each action's plan.
    pub fn plans(&self) -> impl Iterator<Item = (String, String)> {
        self.operations().map(|(op, _)| {
            let plan = serde_json::to_string(&op.plan).expect("a plan always serializes");
            (quiver_contract::openapi::plan_key(&op.name), plan)
        })
    }
}
