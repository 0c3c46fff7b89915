//! One guest call: a fresh `Store` under the plugin's grants, one export,
//! and the outcome named by its cause.
//!
//! Each call instantiates the plugin from its `InstancePre` (microseconds
//! with the pooling allocator), runs one export under an epoch deadline and
//! a memory cap, and drops the store. A trap, timeout or OOM ends that store
//! only; nothing is shared between calls — unless the operator opted the
//! plugin into instances kept per caller ([`kept`](super::kept)), where a
//! clean call hands its store on to the same caller's next call.

use wasmtime::{Engine, Store, Trap};

use super::kept::{Live, Warm};
use crate::contract::tool::ToolPre;
use crate::contract::{Access, Shape, guest_error, sanitize, sanitize_cut};
use crate::error::{Error, Result};
use crate::load::{Manifest, Plugin};
use crate::sandbox::{self, Ending, GuestState};

/// Longest error or crash text a guest may hand a model (a model needs
/// the reason, not a dump); longer texts are cut with a note. Every such
/// text passes the one sanitiser ([`guest_text`]).
pub(crate) const MAX_ERROR_BYTES: usize = 4096;

/// Extra wall-clock time past the CPU deadline before the call is dropped
/// (covers time blocked in host calls, which epochs cannot interrupt).
pub(super) const WALL_GRACE: std::time::Duration = std::time::Duration::from_millis(250);

/// Run `describe()` in a fresh instance and check the manifest.
pub(crate) async fn describe(engine: &Engine, pre: &ToolPre<GuestState>, plugin: &Plugin) -> Result<Manifest> {
    let grants = &plugin.settings().grants;
    let deadline = std::time::Instant::now() + grants.limits.timeout();
    let mut store = sandbox::store(engine, plugin.name(), grants, Access::Read, deadline);
    let outcome = tokio::time::timeout(grants.limits.timeout() + WALL_GRACE, async {
        let instance = pre.instantiate_async(&mut store).await?;
        instance.quiver_plugin_plugin().call_describe(&mut store).await
    })
    .await;
    let ending = store.data_mut().finish();
    let manifest = settle(ending, plugin, "describe", outcome)?;
    Manifest::from_wit(manifest, plugin.name())
}

/// What one guest call leaves behind: its result, the statuses of the
/// HTTP responses it received and what else it did, whatever its outcome;
/// and, when it ended cleanly, its store and instance, which the next
/// call of the same caller may run in (see [`kept`](super::kept)).
pub(crate) struct Ran {
    pub(crate) result: Result<serde_json::Value>,
    pub(crate) statuses: Vec<u16>,
    pub(crate) usage: crate::telemetry::Usage,
    pub(crate) warm: Option<Warm>,
}

impl Ran {
    /// A call that failed before it reached the guest.
    pub(crate) fn refused(error: Error) -> Ran {
        Ran { result: Err(error), statuses: Vec::new(), usage: Default::default(), warm: None }
    }
}

/// The store a call runs in: `warm`'s (ready for this call) when it holds
/// an instance `live` accepts, else a fresh one under the plugin's grants.
pub(super) fn store_for<I>(
    engine: &Engine,
    plugin: &Plugin,
    ceiling: Access,
    deadline: std::time::Instant,
    warm: Option<Warm>,
    live: impl FnOnce(Live) -> Option<I>,
) -> (Store<GuestState>, Option<I>) {
    let grants = &plugin.settings().grants;
    if let Some(Warm { mut store, live: kept }) = warm
        && let Some(instance) = live(kept)
    {
        sandbox::rearm(&mut store, grants, deadline);
        return (store, Some(instance));
    }
    (sandbox::store(engine, plugin.name(), grants, ceiling, deadline), None)
}

/// Run `invoke(action, input)` by `deadline` (the call's, which a wait for
/// a slot has used up in part) in `warm`'s instance, else in a fresh one;
/// `input` was validated.
pub(crate) async fn invoke(
    engine: &Engine,
    pre: &ToolPre<GuestState>,
    plugin: &Plugin,
    (action, input): (&str, &str),
    (ceiling, deadline): (Access, std::time::Instant),
    warm: Option<Warm>,
) -> Ran {
    let contract = |live| match live {
        Live::Contract(tool) => Some(tool),
        Live::Plain(_) => None,
    };
    let (mut store, kept) = store_for(engine, plugin, ceiling, deadline, warm, contract);
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    let guest = crate::telemetry::spans::guest(plugin.name(), action);
    let outcome = tokio::time::timeout(left + WALL_GRACE, async {
        let instance = match kept {
            Some(instance) => instance,
            None => {
                let instantiating = crate::telemetry::spans::instantiate(plugin.name());
                tracing::Instrument::instrument(pre.instantiate_async(&mut store), instantiating).await?
            }
        };
        let calling = instance.quiver_plugin_plugin().call_invoke(&mut store, action, input);
        let answer = tracing::Instrument::instrument(calling, guest.clone()).await?;
        wasmtime::Result::Ok((answer, instance))
    })
    .await;
    let mut ending = store.data_mut().finish();

    let statuses = std::mem::take(&mut ending.http_statuses);
    let usage = ending.usage;
    let clean = ending.reusable;
    let (answer, warm) = match settle(ending, plugin, action, outcome) {
        Ok((answer, instance)) => (Ok(answer), clean.then(|| Warm { store, live: Live::Contract(instance) })),
        Err(error) => (Err(error), None),
    };
    let result = output(answer, plugin, action);
    if let Err(error) = &result {
        crate::telemetry::spans::failed(&guest, &format!("{:?}", error.kind()));
    }
    Ran { result, statuses, usage, warm }
}

/// The guest's answer to `invoke` as our result: its typed error, or its
/// output within the size limit and parsed.
fn output(
    answer: Result<std::result::Result<String, crate::contract::wit::Error>>,
    plugin: &Plugin,
    action: &str,
) -> Result<serde_json::Value> {
    let limits = plugin.settings().grants.limits;
    let output = answer?.map_err(|e| {
        let (kind, message) = guest_error(e);
        let message = guest_text(&message, MAX_ERROR_BYTES.min(limits.output_bytes()));
        Error::Guest { plugin: plugin.name().to_owned(), action: action.to_owned(), kind, message }
    })?;
    if output.len() > limits.output_bytes() {
        return Err(Error::OutputTooLarge {
            plugin: plugin.name().to_owned(),
            action: action.to_owned(),
            size: output.len(),
            limit: limits.output_bytes(),
        });
    }
    serde_json::from_str(&output).map_err(|e| Error::InvalidOutput {
        plugin: plugin.name().to_owned(),
        action: action.to_owned(),
        reason: e.to_string(),
    })
}

/// Turn the outcome of a guest call into our result, naming the cause of a
/// failure: the deadline, the memory cap, or a crash (with the panic
/// message when the guest reported one).
pub(super) fn settle<T>(
    ending: Ending,
    plugin: &Plugin,
    action: &str,
    outcome: std::result::Result<wasmtime::Result<T>, tokio::time::error::Elapsed>,
) -> Result<T> {
    let limits = plugin.settings().grants.limits;
    let timeout =
        || Error::Timeout { plugin: plugin.name().to_owned(), action: action.to_owned(), limit: limits.timeout() };
    let error = match outcome {
        Ok(Ok(value)) => return Ok(value),
        Err(_elapsed) => return Err(timeout()),
        Ok(Err(error)) => error,
    };
    if ending.memory_hit {
        return Err(Error::MemoryLimit {
            plugin: plugin.name().to_owned(),
            action: action.to_owned(),
            limit_bytes: limits.memory_bytes(),
        });
    }
    let trap = error.downcast_ref::<Trap>().copied();
    if trap == Some(Trap::Interrupt) {
        return Err(timeout());
    }
    let message = ending
        .last
        .panic
        .or_else(|| trap.is_some().then_some(ending.last.stderr).flatten())
        .or_else(|| trap.map(|t| t.to_string()))
        .unwrap_or_else(|| format!("{error:#}"));
    let message = guest_text(&message, MAX_ERROR_BYTES.min(limits.output_bytes()));
    // The reason at warn, on one line; wasmtime's whole report (a wasm
    // backtrace, many lines) only with -vv.
    tracing::warn!(plugin = plugin.name(), action, reason = %sanitize(&message, Shape::Line), "guest call failed");
    let report = sanitize_cut(&format!("{error:#}"), Shape::Line, MAX_ERROR_BYTES);
    tracing::debug!(plugin = plugin.name(), action, error = %report, "guest trap");
    Err(Error::Trap { plugin: plugin.name().to_owned(), action: action.to_owned(), message })
}

/// A guest's error or crash `text` as the host passes it on (to a model,
/// a terminal, a log): through the one sanitiser, keeping its lines and
/// tabs (escaping every other control character), cut to at most `max`
/// bytes at a character boundary with a note of what was left out.
pub(super) fn guest_text(text: &str, max: usize) -> String {
    sanitize_cut(text, Shape::Lines, max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Kind, wit};
    use crate::error::GuestErrorKind;
    use crate::invoke::testing::plugin;
    use crate::load::PluginSettings;

    #[test]
    fn a_guests_answer_becomes_a_value_or_a_typed_error() {
        let mut settings = PluginSettings::default();
        settings.grants.limits.max_output_kb = 1;
        let plugin = plugin("p", Kind::Tool, &[("a", Access::Read)], settings);
        assert_eq!(output(Ok(Ok(r#"{"n":1}"#.into())), &plugin, "a").unwrap(), serde_json::json!({"n": 1}));
        let denied = output(Ok(Err(wit::Error::Denied("no\u{1b}[2J".into()))), &plugin, "a").unwrap_err();
        match denied {
            Error::Guest { kind, message, .. } => {
                assert_eq!((kind, message.as_str()), (GuestErrorKind::Denied, "no\\u{1b}[2J"))
            }
            other => panic!("{other:?}"),
        }
        let big = output(Ok(Ok(format!("\"{}\"", "x".repeat(2000)))), &plugin, "a").unwrap_err();
        assert!(matches!(big, Error::OutputTooLarge { size: 2002, limit: 1024, .. }), "{big:?}");
        assert!(matches!(output(Ok(Ok("{".into())), &plugin, "a"), Err(Error::InvalidOutput { .. })));
    }

    #[test]
    fn guest_texts_are_escaped_and_cut_at_a_character() {
        assert_eq!(super::guest_text("short", 10), "short");
        assert_eq!(super::guest_text("é".repeat(10).as_str(), 5), "éé… (16 more bytes)");
        assert_eq!(super::guest_text("a\n\tb\r\u{1b}[2J", 100), "a\n\tb\\r\\u{1b}[2J");
    }
}
