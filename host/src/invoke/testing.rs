//! What the core path's unit tests share: catalogs built in memory, and a
//! backend that answers what it is told and remembers what it was asked.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{Answer, Backend, BoxFuture, Call, Facts, Output};
use crate::catalog::{Catalog, ToolRecord};
use crate::contract::{Access, Kind, Stub, StubAction};
use crate::error::Result;
use crate::load::{Origin, Plugin, PluginSettings};

/// A plugin of `kind` with `actions` (name, access), with `settings`.
pub(crate) fn plugin(name: &str, kind: Kind, actions: &[(&str, Access)], settings: PluginSettings) -> Arc<Plugin> {
    let mut stub = Stub::new(name, "1.0.0", kind, &format!("The {name} plugin."));
    stub.actions = actions
        .iter()
        .map(|(action, access)| StubAction {
            name: (*action).into(),
            summary: format!("Does {action}."),
            access: *access,
        })
        .collect();
    Arc::new(Plugin::new(stub, Origin::Embedded { file_name: "test.wasm", bytes: b"" }, settings))
}

/// A catalog serving `plugins`.
pub(crate) fn catalog(plugins: Vec<Arc<Plugin>>) -> Catalog {
    let mut catalog = Catalog::default();
    for plugin in plugins {
        catalog.serve(plugin);
    }
    catalog
}

/// One call a [`Fake`] received: the tool's model-facing name and the input.
pub(crate) type Received = (String, Value);

/// A backend whose answers are queued by the test (an echo of the input
/// when none is), with every tool's schema an open object.
#[derive(Default)]
pub(crate) struct Fake {
    answers: Mutex<VecDeque<Result<Output>>>,
    statuses: Vec<u16>,
    pub(crate) received: Mutex<Vec<Received>>,
}

impl Fake {
    /// A backend that answers `answers`, in order, then echoes.
    pub(crate) fn answering(answers: Vec<Result<Output>>) -> Fake {
        Fake { answers: Mutex::new(answers.into()), ..Fake::default() }
    }

    /// The same, reporting `statuses` as the HTTP statuses of every call.
    pub(crate) fn with_statuses(mut self, statuses: Vec<u16>) -> Fake {
        self.statuses = statuses;
        self
    }

    /// The calls received so far.
    pub(crate) fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

impl Backend for Fake {
    fn definitions<'a>(&'a self, catalog: &'a Catalog, origin: &'a str) -> BoxFuture<'a, Result<Vec<ToolRecord>>> {
        let records = catalog
            .tools_of(origin)
            .iter()
            .map(|e| ToolRecord { input_schema: Some(json!({"type": "object"})), ..ToolRecord::of_entry(e) })
            .collect();
        Box::pin(async move { Ok(records) })
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Answer> {
        self.received.lock().unwrap().push((call.tool.name.clone(), call.input.clone()));
        let result = self.answers.lock().unwrap().pop_front().unwrap_or(Ok(Output::Json(call.input)));
        let mut facts = Facts::starting(call.tool, None);
        facts.http_statuses = self.statuses.clone();
        Box::pin(async move { Answer { result, facts } })
    }
}
