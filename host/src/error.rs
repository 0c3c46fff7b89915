//! The one error type of the library.
//!
//! Every variant names its subject (the plugin file or name, the action,
//! the configuration entry) and its cause; [`Error::remedy`] says how to
//! fix it. Tests and faces match on [`Error::kind`]: [`ErrorKind`] is
//! derived from the variants (strum), so the two cannot drift apart.

use std::time::Duration;

/// How an upstream MCP server failed a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UpstreamFault {
    /// Its process could not be spawned, or its URL not reached.
    Start,
    /// It did not complete the MCP handshake.
    Handshake,
    /// Its connection closed mid-call (a crash, a killed process).
    Crashed,
    /// It did not answer within the call's timeout.
    Timeout,
    /// It answered something that is not valid MCP (or too large).
    Protocol,
    /// It failed several times in a row; the next attempt waits.
    Failing,
}

impl std::fmt::Display for UpstreamFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UpstreamFault::Start => "could not start",
            UpstreamFault::Handshake => "no MCP handshake",
            UpstreamFault::Crashed => "connection lost",
            UpstreamFault::Timeout => "timed out",
            UpstreamFault::Protocol => "invalid answer",
            UpstreamFault::Failing => "failing",
        })
    }
}

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a plugin was rejected or a call failed.
#[non_exhaustive]
#[derive(Debug, Clone, thiserror::Error, strum::EnumDiscriminants)]
#[strum_discriminants(name(ErrorKind), derive(Hash), non_exhaustive)]
#[strum_discriminants(doc = "The kinds of [`Error`], without their fields.")]
pub enum Error {
    /// The file does not start with the WebAssembly magic number, or is truncated.
    #[error("{origin}: not a WebAssembly file ({reason})")]
    NotWasm {
        /// The plugin file or bundled name.
        origin: String,
        /// What the parser found.
        reason: String,
    },

    /// A core WebAssembly module, not a component.
    #[error("{origin}: is a core WebAssembly module, not a component")]
    CoreModule {
        /// The plugin file or bundled name.
        origin: String,
    },

    /// The component has no `quiver:stub` section.
    #[error(
        "{origin}: has no `quiver:stub` section (what Quiver lists without compiling); write it with `quiver package {origin}`"
    )]
    MissingStub {
        /// The plugin file or bundled name.
        origin: String,
    },

    /// A component with no stub and no Quiver contract whose exports hold
    /// no function a model can call (see `load::plain`).
    #[error("{origin}: exports no function a model can call ({reasons})")]
    NothingToServe {
        /// The plugin file or bundled name.
        origin: String,
        /// Each export and why it is not served, or why the component
        /// could not be read.
        reasons: String,
    },

    /// The `quiver:stub` section is malformed or breaks a rule.
    #[error("{origin}: invalid `quiver:stub` section: {reason}")]
    InvalidStub {
        /// The plugin file or bundled name.
        origin: String,
        /// Which rule it breaks.
        reason: String,
    },

    /// The component does not implement the world its kind requires, or
    /// imports something its kind may not use.
    #[error("plugin `{plugin}` ({origin}) does not fit the `{world}` world: {reason}")]
    WrongWorld {
        /// The plugin name from its stub.
        plugin: String,
        /// The plugin file or bundled name.
        origin: String,
        /// The world the plugin's kind requires.
        world: String,
        /// The missing export or forbidden import.
        reason: String,
    },

    /// The stub section disagrees with what `describe()` returns.
    #[error("plugin `{plugin}` ({origin}): its stub disagrees with describe(): {differences}")]
    StubMismatch {
        /// The plugin name from its stub.
        plugin: String,
        /// The plugin file or bundled name.
        origin: String,
        /// Each difference, `field: stub says X, describe() says Y`.
        differences: String,
    },

    /// The manifest `describe()` returned breaks a rule (bad schema, bad name...).
    #[error("plugin `{plugin}`: invalid manifest: {reason}")]
    InvalidManifest {
        /// The plugin name.
        plugin: String,
        /// Which rule it breaks.
        reason: String,
    },

    /// wasmtime could not compile or instantiate the component.
    #[error("plugin `{plugin}` ({origin}) failed to load: {message}")]
    Compile {
        /// The plugin name.
        plugin: String,
        /// The plugin file or bundled name.
        origin: String,
        /// wasmtime's message.
        message: String,
    },

    /// Two plugins (or a plugin and an MCP server, or two tools' model-facing
    /// names) are the same; the later plugin, the server, or the tool that
    /// is not the first to have the name is rejected.
    #[error("{origin}: the name `{name}` is already used by {first}")]
    DuplicateName {
        /// The contested name.
        name: String,
        /// The rejected plugin file.
        origin: String,
        /// The plugin that keeps the name.
        first: String,
    },

    /// The plugin of this name was refused when it was loaded.
    #[error("plugin `{plugin}` is not served: {origin} was rejected: {reason}")]
    Rejected {
        /// The requested name.
        plugin: String,
        /// The rejected file (or configuration section).
        origin: String,
        /// Why it was rejected.
        reason: String,
    },

    /// No plugin has this name.
    #[error("no plugin named `{plugin}`{}", known_list(.known))]
    UnknownPlugin {
        /// The requested name.
        plugin: String,
        /// The names that exist.
        known: Vec<String>,
    },

    /// The plugin has no action of this name.
    #[error("plugin `{plugin}` has no action `{action}`{}", known_list(.known))]
    UnknownAction {
        /// The plugin name.
        plugin: String,
        /// The requested action.
        action: String,
        /// The actions that exist.
        known: Vec<String>,
    },

    /// The input is not JSON, or not a JSON object.
    #[error("input of `{plugin}.{action}` is not a JSON object: {reason}")]
    InputNotJson {
        /// The plugin name.
        plugin: String,
        /// The action name.
        action: String,
        /// The parser's message.
        reason: String,
    },

    /// The input does not satisfy the action's input schema.
    #[error("input of `{plugin}.{action}` does not match its schema: {}", .errors.join("; "))]
    InputSchema {
        /// The plugin name.
        plugin: String,
        /// The action name.
        action: String,
        /// Each violation, `at /path: message`.
        errors: Vec<String>,
    },

    /// The plugin returned its own typed error.
    #[error("`{plugin}.{action}` failed ({kind}): {message}")]
    Guest {
        /// The plugin name.
        plugin: String,
        /// The action name.
        action: String,
        /// The error kind the plugin chose.
        kind: GuestErrorKind,
        /// The plugin's message.
        message: String,
    },

    /// The guest trapped: a panic, an `unreachable`, a stack overflow...
    #[error("`{plugin}.{action}` crashed: {message}")]
    Trap {
        /// The plugin name.
        plugin: String,
        /// The action name.
        action: String,
        /// The panic message, or wasmtime's trap description.
        message: String,
    },

    /// The call ran past its deadline and was interrupted.
    #[error("`{plugin}.{action}` timed out after {} ms", .limit.as_millis())]
    Timeout {
        /// The plugin name.
        plugin: String,
        /// The action name.
        action: String,
        /// The configured limit.
        limit: Duration,
    },

    /// The guest tried to grow its memory past the limit.
    #[error("`{plugin}.{action}` exceeded its memory limit of {} MiB", .limit_bytes / (1024 * 1024))]
    MemoryLimit {
        /// The plugin name.
        plugin: String,
        /// The action name.
        action: String,
        /// The configured limit in bytes.
        limit_bytes: u64,
    },

    /// Every instance slot stayed busy until the call's deadline, or too
    /// many calls were already waiting for one.
    #[error("`{plugin}.{action}` could not start: {reason}")]
    Busy {
        /// The plugin name.
        plugin: String,
        /// The action name.
        action: String,
        /// What was full, and for how long it was waited on.
        reason: String,
    },

    /// An upstream MCP server could not serve the call: it did not start,
    /// crashed, hung, broke the protocol, or keeps failing. (A tool error
    /// the server reports is a result with `isError`, not this.)
    #[error("MCP server `{server}`: {fault}: {message}")]
    Upstream {
        /// The configured server name.
        server: String,
        /// What went wrong.
        fault: UpstreamFault,
        /// The details (never a secret: header and environment values are
        /// not part of it).
        message: String,
    },

    /// The output is larger than the configured cap.
    #[error("output of `{plugin}.{action}` is {size} bytes, over the limit of {limit} bytes")]
    OutputTooLarge {
        /// The plugin name.
        plugin: String,
        /// The action name.
        action: String,
        /// Size of the output.
        size: usize,
        /// The configured limit.
        limit: usize,
    },

    /// The guest's output is not valid JSON.
    #[error("output of `{plugin}.{action}` is not valid JSON: {reason}")]
    InvalidOutput {
        /// The plugin name.
        plugin: String,
        /// The action name.
        action: String,
        /// The parser's message.
        reason: String,
    },

    /// A skill folder is not a valid Agent Skill.
    #[error("{path}: invalid skill: {reason}")]
    InvalidSkill {
        /// The `SKILL.md` file.
        path: String,
        /// Which rule it breaks.
        reason: String,
    },

    /// A file in the MCP folder is not a saved `tools/list` result.
    #[error("{path}: {reason}")]
    InvalidMcpList {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },

    /// A session was asked to call a tool it does not offer.
    #[error("no tool `{name}` in this session: {hint}")]
    UnknownTool {
        /// The requested name.
        name: String,
        /// What to do instead.
        hint: String,
    },

    /// A meta-tool was called with arguments it cannot use.
    #[error("`{tool}`: {reason}")]
    InvalidArguments {
        /// The meta-tool.
        tool: String,
        /// What is wrong and what is expected.
        reason: String,
    },

    /// The resource's own ceiling (a connector's `access`) is below the
    /// action's access level, whoever calls.
    #[error(
        "`{resource}.{action}` needs `{needed}` access, and the operator allows at most `{allowed}` on `{resource}`"
    )]
    AboveCeiling {
        /// The plugin instance.
        resource: String,
        /// The action.
        action: String,
        /// The access level the action declares.
        needed: quiver_contract::Access,
        /// The resource's ceiling.
        allowed: quiver_contract::Access,
    },

    /// The caller's access token has no scope that covers the action.
    #[error("`{resource}.{action}` needs the scope `{scope}`, which the access token does not carry")]
    OutOfScope {
        /// The plugin instance, database or server.
        resource: String,
        /// The action.
        action: String,
        /// The scope that would cover it (`quiver:RESOURCE:LEVEL`).
        scope: String,
    },

    /// The caller's grant does not cover the action's access level.
    #[error(
        "`{resource}.{action}` needs `{needed}` access, and {} is granted `{granted}` on `{resource}`",
        .agent.as_deref().map_or("this caller".to_owned(), |a| format!("agent `{a}`"))
    )]
    Denied {
        /// The plugin instance, database or server.
        resource: String,
        /// The action.
        action: String,
        /// The access level the action declares.
        needed: quiver_contract::Access,
        /// The level the caller is granted on the resource.
        granted: quiver_contract::Access,
        /// The agent, if any.
        agent: Option<String>,
    },

    /// The resource exists but cannot be called (e.g. a read-only MCP entry).
    #[error("`{name}` cannot be called: {reason}")]
    NotCallable {
        /// The resource.
        name: String,
        /// Why.
        reason: String,
    },

    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },

    /// The configuration is invalid.
    #[error("configuration: {at}: {message}")]
    Config {
        /// Where: the file and section, or the environment variable.
        at: String,
        /// What is wrong and what is expected.
        message: String,
    },

    /// A fault in the host itself, or in its environment (threads, sockets).
    #[error("internal error in {subject}: {message}")]
    Internal {
        /// The part of the host that failed.
        subject: String,
        /// What happened.
        message: String,
    },
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() { String::new() } else { format!("; known: {}", known.join(", ")) }
}

/// The error kinds a plugin can return (the WIT `error` variant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GuestErrorKind {
    /// The input was not acceptable.
    InvalidInput,
    /// Something the input names does not exist.
    NotFound,
    /// The plugin refused.
    Denied,
    /// A dependency is unreachable or not configured.
    Unavailable,
    /// Any other failure.
    Failed,
}

impl std::fmt::Display for GuestErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::InvalidInput => "invalid input",
            Self::NotFound => "not found",
            Self::Denied => "denied",
            Self::Unavailable => "unavailable",
            Self::Failed => "failed",
        })
    }
}

impl Error {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::from(self)
    }

    /// A configuration error at `at` (a file and section, or a variable).
    pub fn config(at: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Config { at: at.into(), message: message.into() }
    }

    /// A fault of the host in `subject`.
    pub fn internal(subject: impl Into<String>, message: impl std::fmt::Display) -> Error {
        Error::Internal { subject: subject.into(), message: message.to_string() }
    }

    /// How to fix it, in one line, where the fix is known.
    pub fn remedy(&self) -> Option<std::borrow::Cow<'static, str>> {
        let named = |what: &str, plugin: &str| format!("run `quiver describe {plugin}` to see {what}").into();
        Some(match self {
            Error::UnknownAction { plugin, .. } => return Some(named("its actions", plugin)),
            Error::InputSchema { plugin, .. } => return Some(named("the input schema", plugin)),
            Error::NotWasm { .. } => "build the plugin with `cargo build --release --target wasm32-wasip2`",
            Error::CoreModule { .. } => {
                "build for the `wasm32-wasip2` target (it links a component), not wasm32-unknown-unknown or wasip1"
            }
            Error::MissingStub { .. } => {
                "run `quiver package FILE.wasm`, which writes it from the plugin's describe() (or build the \
                 plugin with quiver-sdk's #[plugin] attribute, which writes it at compile time)"
            }
            Error::NothingToServe { .. } => {
                "export an interface of plain functions (any toolchain), or implement Quiver's `quiver:plugin/tool` \
                 world (quiver-sdk)"
            }
            Error::InvalidStub { .. } => "rebuild the plugin with a current quiver-sdk",
            Error::WrongWorld { .. } => {
                "declare the right kind in #[plugin(kind = ...)]: tool (no network), connector (HTTP), database (SQL)"
            }
            Error::StubMismatch { .. } => {
                "rebuild the plugin: its stub section must be generated from the same source as describe()"
            }
            Error::InvalidManifest { .. } => "fix the plugin's manifest and rebuild it",
            Error::DuplicateName { .. } => {
                "rename one of them (a plugin, an MCP server's file), or remove the older file"
            }
            Error::Rejected { .. } => {
                "fix what the reason says and save the file again (hot reload picks it up); `quiver check FILE` \
                 validates it fully"
            }
            Error::UnknownPlugin { .. } => "run `quiver list` to see the plugins",
            Error::InputNotJson { .. } => "pass the input as a JSON object, e.g. '{\"key\": \"value\"}'",
            Error::Timeout { .. } => "raise `timeout_ms` for this plugin in the config file if the work is legitimate",
            Error::MemoryLimit { .. } => {
                "raise `memory_mb` for this plugin in the config file if the work is legitimate"
            }
            Error::OutputTooLarge { .. } => "ask for less data, or raise `max_output_kb` in the config file",
            Error::Upstream { fault: UpstreamFault::Timeout, .. } => {
                "retry once, with a smaller request if it can be; the operator can raise the server's `timeout`"
            }
            Error::Upstream { .. } => {
                "retry later or use another tool; the operator finds the server's last stderr lines in Quiver's log"
            }
            Error::Busy { .. } => {
                "retry in a moment; the operator can raise `max_concurrency` or `max_queue` in `[engine]`"
            }
            Error::InvalidSkill { .. } => {
                "SKILL.md starts with `---`, YAML with `name` (the folder name, a-z0-9-) and `description`, then `---`"
            }
            Error::InvalidMcpList { .. } => "save the `tools` array of a tools/list result as <server>.json",
            Error::AboveCeiling { .. } => {
                "use an action within the ceiling (see its access level), or ask the operator to raise the \
                 resource's `access` setting"
            }
            Error::OutOfScope { .. } => {
                "use an action the token's scopes cover, or have the client ask the authorization server for the \
                 scope named"
            }
            Error::Denied { .. } => {
                "use an action within the grant (see its access level), or ask the operator to raise `access` in \
                 the agent's profile"
            }
            _ => return None,
        }
        .into())
    }
}
