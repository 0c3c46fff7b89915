//! One call of a plain component's function: the model's JSON lowered to
//! component values by the function's WIT types, the export called
//! dynamically in a fresh store under the plugin's grants (or the one its
//! caller's last call left, see [`kept`](super::kept)), and its result
//! lifted back to JSON. A `result`'s error is the call's typed error
//! (`failed`, with the error value as its message).

use serde_json::Value;
use wasmtime::Engine;
use wasmtime::component::{Component, ComponentExportIndex, InstancePre, Val};

use super::call::{MAX_ERROR_BYTES, Ran, guest_text, settle, store_for};
use super::kept::{Live, Warm};
use crate::contract::Access;
use crate::error::{Error, GuestErrorKind, Result};
use crate::load::Plugin;
use crate::load::plain::types::Ty;
use crate::load::plain::values::{lift, lower, payload};
use crate::load::plain::{Func, Plain};
use crate::sandbox::GuestState;

/// The index of each action's export in `component`, resolved once when
/// the plugin is prepared; a function its types declare but the component
/// does not export (it cannot happen to a valid component) is an error.
pub(crate) fn exports(
    component: &Component,
    plain: &Plain,
    plugin: &Plugin,
) -> Result<Vec<(String, ComponentExportIndex)>> {
    plain
        .functions
        .iter()
        .map(|function| {
            let name = function.export.function.as_str();
            let index = match &function.export.interface {
                Some(interface) => component
                    .get_export_index(None, interface.as_str())
                    .and_then(|interface| component.get_export_index(Some(&interface), name)),
                None => component.get_export_index(None, name),
            };
            let index = index.ok_or_else(|| Error::WrongWorld {
                plugin: plugin.name().to_owned(),
                origin: plugin.origin().to_string(),
                world: "the world its types declare".into(),
                reason: format!("it does not export the function `{name}` its types declare"),
            })?;
            Ok((function.action.clone(), index))
        })
        .collect()
}

/// Lower `input` (checked against the action's schema) to the arguments
/// of `function`; an error names where a value does not fit.
pub(crate) fn arguments(plugin: &Plugin, function: &Func, input: &Value) -> Result<Vec<Val>> {
    let invalid = |message: String| Error::InputSchema {
        plugin: plugin.name().to_owned(),
        action: function.action.clone(),
        errors: vec![message],
    };
    let object = input.as_object().ok_or_else(|| invalid("the input must be a JSON object".into()))?;
    function
        .params
        .iter()
        .map(|(name, ty)| match (object.get(name), ty) {
            (Some(value), ty) => lower(ty, value, &format!("/{name}")).map_err(invalid),
            (None, Ty::Option(_)) => Ok(Val::Option(None)),
            (None, _) => Err(invalid(format!("/: the argument `{name}` is missing"))),
        })
        .collect()
}

/// Call `function` (export `index`) of `plugin` with `args`, by
/// `deadline`, in `warm`'s instance, else in a fresh one.
pub(crate) async fn invoke(
    engine: &Engine,
    pre: &InstancePre<GuestState>,
    index: &ComponentExportIndex,
    plugin: &Plugin,
    (function, args): (&Func, Vec<Val>),
    (ceiling, deadline): (Access, std::time::Instant),
    warm: Option<Warm>,
) -> Ran {
    let grants = &plugin.settings().grants;
    let action = function.action.as_str();
    let plain = |live| match live {
        Live::Plain(instance) => Some(instance),
        Live::Contract(_) => None,
    };
    let (mut store, kept) = store_for(engine, plugin, ceiling, deadline, warm, plain);
    // What the guest may hand the host in one go: a few times the output
    // limit (wasmtime's default is 128 MiB).
    store.set_hostcall_fuel(grants.limits.output_bytes().saturating_mul(8).max(4 << 20));
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    let guest = crate::telemetry::spans::guest(plugin.name(), action);
    let mut results = vec![Val::Bool(false); usize::from(function.result.is_some())];
    let outcome = tokio::time::timeout(left + super::call::WALL_GRACE, async {
        let instance = match kept {
            Some(instance) => instance,
            None => {
                let instantiating = crate::telemetry::spans::instantiate(plugin.name());
                tracing::Instrument::instrument(pre.instantiate_async(&mut store), instantiating).await?
            }
        };
        let func = instance
            .get_func(&mut store, index)
            .ok_or_else(|| wasmtime::format_err!("the component has no function `{}`", function.export.function))?;
        tracing::Instrument::instrument(func.call_async(&mut store, &args, &mut results), guest.clone()).await?;
        wasmtime::Result::Ok(instance)
    })
    .await;
    let mut ending = store.data_mut().finish();
    let statuses = std::mem::take(&mut ending.http_statuses);
    let usage = ending.usage;
    let clean = ending.reusable;
    let (result, warm) = match settle(ending, plugin, action, outcome) {
        Ok(instance) => {
            (output(plugin, function, results.first()), clean.then(|| Warm { store, live: Live::Plain(instance) }))
        }
        Err(error) => (Err(error), None),
    };
    if let Err(error) = &result {
        crate::telemetry::spans::failed(&guest, &format!("{:?}", error.kind()));
    }
    Ran { result, statuses, usage, warm }
}

/// The function's result as our answer: its value as JSON within the
/// output limit, or its `result`'s error as a typed error.
fn output(plugin: &Plugin, function: &Func, result: Option<&Val>) -> Result<Value> {
    let action = function.action.as_str();
    let broken =
        |reason: String| Error::InvalidOutput { plugin: plugin.name().to_owned(), action: action.to_owned(), reason };
    let value = match (&function.result, result) {
        (None, _) => Value::Null,
        (Some(Ty::Result { ok, err }), Some(Val::Result(answer))) => match answer {
            Ok(v) => payload(ok, v.as_deref()).map_err(broken)?,
            Err(v) => {
                let error = payload(err, v.as_deref()).map_err(broken)?;
                let text = match error {
                    Value::String(text) => text,
                    Value::Null => "the function returned an error".to_owned(),
                    other => other.to_string(),
                };
                let limit = plugin.settings().grants.limits.output_bytes();
                return Err(Error::Guest {
                    plugin: plugin.name().to_owned(),
                    action: action.to_owned(),
                    kind: GuestErrorKind::Failed,
                    message: guest_text(&text, MAX_ERROR_BYTES.min(limit)),
                });
            }
        },
        (Some(ty), Some(v)) => lift(ty, v).map_err(broken)?,
        (Some(_), None) => return Err(broken("the function returned nothing".into())),
    };
    let limit = plugin.settings().grants.limits.output_bytes();
    let size = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
    if size > limit {
        return Err(Error::OutputTooLarge { plugin: plugin.name().to_owned(), action: action.to_owned(), size, limit });
    }
    Ok(value)
}
