//! The [`Backend`] trait, the [`Call`] it runs, and the backends of a host
//! routed by resource.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::answer::{Answer, Facts, Output};
use super::caller::Caller;
use super::progress;
use crate::audit::{AuditLog, AuditRecord, Params};
use crate::catalog::{Catalog, ToolEntry, ToolRecord};
use crate::contract::{Shape, sanitize_cut};
use crate::error::{Error, Result};
use crate::sandbox::secrets::Redaction;
use crate::telemetry::{Metrics, spans};

/// A boxed future, as the backend trait returns them (object-safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One call of one tool, as a backend receives it. The trace context is
/// the `tracing` span the call runs in (a face opens one per request).
pub struct Call<'a> {
    /// The catalog snapshot the call works on, from its first lookup to
    /// its last.
    pub catalog: &'a Catalog,
    /// The tool, an entry of `catalog`.
    pub tool: &'a ToolEntry,
    /// Its arguments (checked against its schema by the backend).
    pub input: Value,
    /// Who it is made for: the principal, with its grants.
    pub caller: &'a Caller,
    /// Where progress reports go, when the face asked for them.
    pub progress: Option<progress::Sink>,
}

/// What runs the tools of some kind of resource.
pub trait Backend: Send + Sync {
    /// The full record of every tool of `origin` in `catalog`, in order,
    /// loading whatever it must first. Records come from the very resource
    /// version in `catalog`, never from a later snapshot.
    fn definitions<'a>(&'a self, catalog: &'a Catalog, origin: &'a str) -> BoxFuture<'a, Result<Vec<ToolRecord>>>;

    /// Run `call` (its input checked against the tool's schema first) and
    /// answer with the output and what the backend saw of the call (HTTP
    /// statuses, the server that answered); the router completes the
    /// facts (timing, sizes, the principal).
    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Answer>;
}

/// Routes plugins and upstream servers to their backends, refuses what a
/// caller's grant does not cover, fits answers to their budget, and
/// audits every call.
#[derive(Clone)]
pub struct Backends {
    plugins: Arc<dyn Backend>,
    upstream: Arc<dyn Backend>,
    audit: Option<Arc<AuditLog>>,
    metrics: Option<Arc<Metrics>>,
    params: Params,
    /// What is redacted of what goes on spans (`params = "traced"`).
    redaction: Redaction,
}

impl Backends {
    /// Plugins run on `plugins`; upstream MCP servers on `upstream`; calls
    /// are recorded in `audit`, if given.
    pub fn new(plugins: Arc<dyn Backend>, upstream: Arc<dyn Backend>, audit: Option<Arc<AuditLog>>) -> Backends {
        Backends { plugins, upstream, audit, metrics: None, params: Params::default(), redaction: Redaction::default() }
    }

    /// Keep calls' arguments as `params` says, redacting `redaction`'s
    /// secrets from what goes on spans (the audit log redacts its own).
    pub fn with_params(self, params: Params, redaction: Redaction) -> Backends {
        Backends { params, redaction, ..self }
    }

    /// Calls are also counted in `metrics`.
    pub fn with_metrics(self, metrics: Arc<Metrics>) -> Backends {
        Backends { metrics: Some(metrics), ..self }
    }

    /// The audit log, if one is kept.
    pub fn audit(&self) -> Option<&AuditLog> {
        self.audit.as_deref()
    }

    fn of(&self, catalog: &Catalog, origin: &str) -> &dyn Backend {
        if catalog.get(origin).is_none() && catalog.mcp_server(origin).is_some() {
            self.upstream.as_ref()
        } else {
            self.plugins.as_ref()
        }
    }

    /// `value` as a span may show it: credentials redacted by key and by
    /// value, sanitised, within the spans' text limit.
    fn shown(&self, value: &Value) -> String {
        let redacted = crate::audit::redact::redact(value, &self.redaction);
        let text = match &redacted {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        sanitize_cut(&text, Shape::Lines, spans::MAX_TEXT)
    }

    fn audited(&self, answer: &Answer, params: Value) {
        let Some(audit) = &self.audit else { return };
        let facts = &answer.facts;
        audit.record(AuditRecord {
            id: 0,
            time: crate::audit::time(facts.started),
            agent: facts.agent.clone(),
            principal: facts.principal.clone(),
            client_id: facts.client_id.clone(),
            resource: facts.resource.clone(),
            action: facts.action.clone(),
            tool: facts.tool.clone(),
            trace_id: crate::telemetry::context::trace_id(&tracing::Span::current()),
            access: facts.access,
            outcome: answer.outcome(),
            duration_ms: facts.duration.as_secs_f64() * 1e3,
            bytes_in: facts.bytes_in,
            bytes_out: facts.bytes_out,
            http_statuses: facts.http_statuses.clone(),
            params,
        });
    }
}

/// The full record of `tool`, an entry of `catalog`, from `backend`.
pub async fn definition(backend: &dyn Backend, catalog: &Catalog, tool: &ToolEntry) -> Result<ToolRecord> {
    let records = backend.definitions(catalog, &tool.origin).await?;
    records.into_iter().find(|r| r.name == tool.name).ok_or_else(|| Error::UnknownTool {
        name: tool.name.clone(),
        hint: format!("`{}` no longer declares it", tool.origin),
    })
}

/// The tool of `origin` called `name` (its action, or its model-facing
/// name). A live MCP server's tool that `catalog` does not list (the
/// server was never listed, or its list changed since) is looked for in
/// what the server lists now.
pub async fn tool_of(backend: &dyn Backend, catalog: &Catalog, origin: &str, name: &str) -> Result<ToolEntry> {
    let listed = catalog.tools_of(origin);
    if let Some(entry) = listed.iter().find(|t| t.action == name || t.name == name) {
        return Ok(entry.clone());
    }
    let unknown = |known: Vec<String>| Error::UnknownAction { plugin: origin.to_owned(), action: name.into(), known };
    match catalog.mcp_server(origin) {
        Some(server) if server.live => {
            let records = backend.definitions(catalog, origin).await?;
            match records.iter().find(|r| r.action == name || r.name == name) {
                Some(record) => Ok(ToolEntry::of_record(record)),
                None => Err(unknown(records.into_iter().map(|r| r.action).collect())),
            }
        }
        Some(_) => Err(unknown(listed.iter().map(|t| t.action.clone()).collect())),
        None => catalog.action(origin, name).cloned(),
    }
}

impl Backend for Backends {
    fn definitions<'a>(&'a self, catalog: &'a Catalog, origin: &'a str) -> BoxFuture<'a, Result<Vec<ToolRecord>>> {
        self.of(catalog, origin).definitions(catalog, origin)
    }

    /// Refuse an action above the caller's grant, else run it; fit a
    /// plugin's output to its resource's answer budget; complete the
    /// facts; audit it.
    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let (catalog, tool) = (call.catalog, call.tool);
            let mut facts = Facts::starting(tool, call.caller.agent.as_deref());
            if let Some(token) = &call.caller.token {
                facts.principal = Some(token.subject.clone());
                facts.client_id = token.client_id.clone();
            }
            let started = Instant::now();
            facts.bytes_in = super::fit::size(&call.input);
            let params = self.audit.as_ref().map(|audit| match self.params {
                Params::None => Value::Null,
                Params::Audit | Params::Traced => audit.redact(&call.input),
            });
            let traced = (self.params == Params::Traced && spans::enabled()).then(|| self.shown(&call.input));
            let mut answer = match call.caller.permit(catalog, tool) {
                Ok(()) => self.of(catalog, &tool.origin).call(call).await,
                Err(refused) => Answer { result: Err(refused), facts: Facts::starting(tool, None) },
            };
            if let (Ok(Output::Json(value)), Some(budget)) =
                (&mut answer.result, catalog.get(&tool.origin).and_then(|p| p.settings().answer_budget))
            {
                facts.cut = super::fit::fit(value, budget);
            }
            // What the backend saw, then what only the router knows.
            facts.http_statuses = std::mem::take(&mut answer.facts.http_statuses);
            facts.server = answer.facts.server.take();
            facts.cut |= answer.facts.cut;
            facts.usage = answer.facts.usage;
            facts.duration = started.elapsed();
            facts.bytes_out = answer.result.as_ref().map_or(0, Output::size);
            answer.facts = facts;
            if let Some(metrics) = &self.metrics {
                let facts = &answer.facts;
                metrics.call(&facts.resource, &answer.outcome(), facts.http_statuses.len(), facts.usage);
            }
            if let Some(arguments) = traced {
                let result = answer.result.as_ref().ok().map(|output| self.shown(&Value::String(output.text())));
                spans::call_io(&tracing::Span::current(), &arguments, result.as_deref());
            }
            if let Some(params) = params {
                self.audited(&answer, params);
            }
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::contract::{Access, Kind};
    use crate::invoke::testing::{Fake, catalog, plugin};
    use crate::load::PluginSettings;

    fn backends(plugins: Arc<Fake>, audit: Option<Arc<AuditLog>>) -> Backends {
        Backends::new(plugins, Arc::new(Fake::default()), audit)
    }

    fn reader() -> Caller {
        Caller {
            agent: Some("reader".into()),
            access: Arc::new(BTreeMap::from([("*".into(), Access::Read)])),
            token: None,
        }
    }

    async fn call(backends: &Backends, catalog: &Catalog, name: &str, input: Value, caller: &Caller) -> Answer {
        let tool = catalog.tool(name).unwrap();
        backends.call(Call { catalog, tool, input, caller, progress: None }).await
    }

    #[tokio::test]
    async fn a_call_above_a_grant_never_reaches_the_backend() {
        let ceiling = PluginSettings { access: Some(Access::Write), ..PluginSettings::default() };
        let api = plugin(
            "api",
            Kind::Connector,
            &[("get", Access::Read), ("post", Access::Write), ("drop", Access::Admin)],
            ceiling,
        );
        let catalog = catalog(vec![api]);
        let fake = Arc::new(Fake::default());
        let backends = backends(fake.clone(), None);

        let above = call(&backends, &catalog, "api__drop", json!({}), &Caller::operator()).await;
        assert!(matches!(above.result, Err(Error::AboveCeiling { .. })), "{:?}", above.result);
        let denied = call(&backends, &catalog, "api__post", json!({}), &reader()).await;
        assert!(
            matches!(&denied.result, Err(Error::Denied { agent: Some(a), .. }) if a == "reader"),
            "{:?}",
            denied.result
        );
        assert_eq!(denied.outcome(), "denied");
        assert!(fake.received().is_empty(), "{:?}", fake.received());

        let allowed = call(&backends, &catalog, "api__get", json!({"q": 1}), &reader()).await;
        assert_eq!(allowed.result.unwrap(), Output::Json(json!({"q": 1})));
        assert_eq!(fake.received(), [("api__get".to_owned(), json!({"q": 1}))]);
    }

    #[tokio::test]
    async fn the_router_completes_the_facts_the_backend_began() {
        let catalog =
            catalog(vec![plugin("api", Kind::Connector, &[("get", Access::Read)], PluginSettings::default())]);
        let fake = Arc::new(Fake::answering(vec![Ok(Output::Json(json!({"ok": true})))]).with_statuses(vec![301, 200]));
        let answer = call(&backends(fake, None), &catalog, "api__get", json!({"q": "x"}), &reader()).await;
        let facts = &answer.facts;
        assert_eq!((facts.tool.as_str(), facts.resource.as_str(), facts.action.as_str()), ("api__get", "api", "get"));
        assert_eq!(facts.agent.as_deref(), Some("reader"));
        assert_eq!(facts.http_statuses, [301, 200]);
        assert_eq!((facts.bytes_in, facts.bytes_out), (r#"{"q":"x"}"#.len(), r#"{"ok":true}"#.len()));
        assert!(!facts.cut && facts.server.is_none());
        assert_eq!(answer.outcome(), "ok");
    }

    #[tokio::test]
    async fn every_call_is_counted_by_resource_and_outcome_with_its_requests() {
        let ceiling = PluginSettings { access: Some(Access::Read), ..PluginSettings::default() };
        let api = plugin("api", Kind::Connector, &[("get", Access::Read), ("post", Access::Write)], ceiling);
        let catalog = catalog(vec![api]);
        let fake = Arc::new(Fake::answering(vec![Ok(Output::Json(json!(1)))]).with_statuses(vec![302, 200]));
        let metrics = Arc::new(Metrics::new(&crate::telemetry::MetricsSettings::default()));
        let backends = backends(fake, None).with_metrics(metrics.clone());
        call(&backends, &catalog, "api__get", json!({}), &reader()).await;
        call(&backends, &catalog, "api__post", json!({}), &Caller::operator()).await;
        let text = metrics.encode();
        for line in [
            r#"quiver_calls_total{resource="api",outcome="ok"} 1"#,
            r#"quiver_calls_total{resource="api",outcome="above_ceiling"} 1"#,
            r#"quiver_egress_requests_total{resource="api"} 2"#,
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
        }
    }

    #[tokio::test]
    async fn a_plugins_output_is_fitted_to_its_budget_and_audited() {
        let budget = PluginSettings { answer_budget: Some(256), ..PluginSettings::default() };
        let catalog = catalog(vec![plugin("api", Kind::Connector, &[("list", Access::Read)], budget)]);
        let items: Vec<Value> = (0..100).map(|i| json!({"id": i, "name": format!("item {i}")})).collect();
        let fake = Arc::new(Fake::answering(vec![Ok(Output::Json(json!({"items": items})))]));
        let audit = Arc::new(AuditLog::new(None, Vec::new()));
        let secret = json!({"token": "hunter2", "page": 1});
        let answer = call(&backends(fake, Some(audit.clone())), &catalog, "api__list", secret, &reader()).await;
        let output = answer.result.unwrap();
        assert!(answer.facts.cut && output.size() <= 256, "{}", output.size());
        assert_eq!(answer.facts.bytes_out, output.size());
        let record = audit.recent(1, None).pop().unwrap();
        assert_eq!(
            (record.outcome.as_str(), record.bytes_out, record.agent.as_deref()),
            ("ok", output.size(), Some("reader"))
        );
        assert_eq!(record.params["page"], 1);
        assert_ne!(record.params["token"], "hunter2", "a credential-named key is redacted: {}", record.params);
    }

    #[test]
    fn what_a_span_shows_of_arguments_is_redacted_sanitised_and_cut() {
        let secret = crate::sandbox::secrets::Secret::new("hunter2-long".into());
        let backends = backends(Arc::new(Fake::default()), None).with_params(Params::Traced, Redaction::new([&secret]));
        let shown = backends.shown(&json!({"q": "x hunter2-long\u{1b}[2J", "password": "p"}));
        assert!(!shown.contains("hunter2") && !shown.contains("\"p\"") && !shown.contains('\u{1b}'), "{shown}");
        let long = backends.shown(&Value::String("y".repeat(10_000)));
        assert!(long.len() < spans::MAX_TEXT + 64, "{}", long.len());
    }

    #[tokio::test]
    async fn arguments_are_kept_nowhere_when_the_operator_says_none() {
        let catalog =
            catalog(vec![plugin("api", Kind::Connector, &[("list", Access::Read)], PluginSettings::default())]);
        let fake = Arc::new(Fake::answering(vec![Ok(Output::Json(json!([])))]));
        let audit = Arc::new(AuditLog::new(None, Vec::new()));
        let backends = backends(fake, Some(audit.clone())).with_params(Params::None, Redaction::default());
        call(&backends, &catalog, "api__list", json!({"page": 1}), &reader()).await.result.unwrap();
        let record = audit.recent(1, None).pop().unwrap();
        assert_eq!((record.outcome.as_str(), &record.params), ("ok", &Value::Null));
    }
}
