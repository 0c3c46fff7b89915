//! `quiver`: the command-line face of the host. Parses arguments, builds a
//! [`quiver::Host`], runs one command, maps errors to exit codes.

mod call;
mod commands;
mod listing;
mod new;
mod oci;
mod output;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A WebAssembly plugin host for LLM-agent tools, with progressive disclosure.
#[derive(Parser)]
#[command(name = "quiver", version, about)]
struct Cli {
    /// Folder of `*.wasm` plugins (in addition to the bundled ones).
    #[arg(long, global = true, env = "QUIVER_PLUGINS")]
    plugins: Option<PathBuf>,
    /// Configuration file (default: ./quiver.toml if it exists).
    #[arg(long, global = true, env = "QUIVER_CONFIG")]
    config: Option<PathBuf>,
    /// Folder of Agent Skills (one folder per skill, with a SKILL.md).
    #[arg(long, global = true, env = "QUIVER_SKILLS")]
    skills: Option<PathBuf>,
    /// Folder of saved MCP tools/list results (`<server>.json`), served read-only.
    #[arg(long, visible_alias = "corpus", global = true, env = "QUIVER_MCP")]
    mcp: Option<PathBuf>,
    /// An `mcpServers` JSON file (the shape Claude Desktop and Cursor use):
    /// live upstream MCP servers, behind the `mcp` meta-tool.
    #[arg(long, global = true, env = "QUIVER_MCP_CONFIG")]
    mcp_config: Option<PathBuf>,
    /// Agent profile (from the config file) whose disclosure modes apply.
    #[arg(long, global = true, env = "QUIVER_AGENT")]
    agent: Option<String>,
    /// Do not serve the bundled first-party plugins.
    #[arg(long, global = true)]
    no_bundled: bool,
    /// Folder of the compile cache (default: ~/.cache/quiver).
    #[arg(long, global = true, env = "QUIVER_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Do not read or write the compile cache.
    #[arg(long, global = true)]
    no_cache: bool,
    /// Log more to stderr (-v: info, -vv: debug). RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// How log lines are written: `text` for people, `json` for a cluster's log stack (one
    /// object per line: timestamp, level, target, then the fields, `message` among them).
    #[arg(long, global = true, value_enum, default_value = "text", env = "QUIVER_LOG_FORMAT")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List what is served, by served name and kind: plugins, connector and database
    /// instances, MCP servers (as last listed; none is started) and skills. Nothing is compiled.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the Tier-1 prompt (stubs only; nothing is compiled).
    Prompt {
        /// Print JSON: the text and its token counts.
        #[arg(long)]
        json: bool,
    },
    /// Search every tool and skill by what it does (what `search_tools` returns).
    Search {
        /// What you want to do.
        query: String,
        /// How many results.
        #[arg(long, default_value_t = 5)]
        limit: u32,
        /// names, summary or full (full loads the plugins of the results).
        #[arg(long, default_value = "summary")]
        detail: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Count the prompt tokens of the catalog in each mode (loads every plugin).
    Tokens {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print what a served name is, as JSON: a plugin's (or instance's) full manifest
    /// (Tier 2), a tool's definition, an MCP server's tools as last listed, a skill.
    Describe {
        /// A served name (plugin, instance, MCP server, skill) or a tool's model-facing
        /// name (`calc__evaluate`).
        plugin: String,
        /// Only this action.
        action: Option<String>,
    },
    /// Call an action with a JSON object as input: `call PLUGIN ACTION '{...}'`,
    /// or by the name models see, `call PLUGIN__ACTION '{...}'`.
    Call {
        /// Plugin (or MCP server) name, or a tool's model-facing name.
        plugin: String,
        /// Action name (omitted with a model-facing name).
        action: Option<String>,
        /// Input, a JSON object (default `{}`); `-` reads it from standard input,
        /// `@FILE` from a file.
        input: Option<String>,
    },
    /// Validate a plugin file and explain any rejection; with no file, check everything
    /// the configuration serves and exit non-zero naming each resource that fails.
    Check {
        /// The `.wasm` file (default: the whole configuration).
        file: Option<PathBuf>,
    },
    /// Write the `quiver:stub` section into a component built by any
    /// toolchain (componentize-py, componentize-js, raw wit-bindgen), from
    /// its own describe(), so Quiver lists it without compiling it.
    Package {
        /// The component.
        file: PathBuf,
        /// Where to write the packaged component (default: over FILE).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Write a new plugin project (Rust, Python or JavaScript) that builds with one
    /// command and passes `quiver check` as written.
    New {
        /// The language: rust, python or js.
        language: new::Language,
        /// What the plugin is: a tool, a connector (HTTP) or a database adapter (SQL); the
        /// last two in Rust only.
        #[arg(long, value_enum, default_value = "tool")]
        kind: new::PluginKind,
        /// The plugin's name (`[a-z][a-z0-9-]*`).
        name: String,
        /// Where to write it (default: ./NAME; must not exist).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The quiver-sdk source folder a Rust project uses until the SDK is
        /// on crates.io (default: this build's).
        #[arg(long)]
        sdk: Option<PathBuf>,
    },
    /// Compile every plugin now, filling the compile cache.
    Precompile,
    /// Publish a component to an OCI registry in the CNCF Wasm layout (config
    /// application/vnd.wasm.config.v0+json, one application/wasm layer) and print its
    /// manifest digest (sha256:…) on stdout, for an `[[oci]] ref = "REF@DIGEST"` entry.
    Push {
        /// The component.
        file: PathBuf,
        /// Where: REGISTRY/REPOSITORY:TAG.
        reference: String,
        /// Speak plain HTTP to the registry (one on loopback).
        #[arg(long)]
        insecure: bool,
        /// The user of Basic credentials (with --password-env).
        #[arg(long, requires = "password_env")]
        username: Option<String>,
        /// The environment variable holding the password.
        #[arg(long, requires = "username")]
        password_env: Option<String>,
        /// A docker config.json whose `auths` entry for the registry is used.
        #[arg(long, conflicts_with = "username")]
        docker_config: Option<PathBuf>,
    },
    /// Plugins from OCI registries: pin tags, pull now.
    Oci {
        #[command(subcommand)]
        command: oci::OciCommand,
    },
    /// Watch the folders and print every change of the catalog as it is
    /// published (hot reload), until interrupted.
    Watch,
    /// Serve MCP (stdio, or streamable HTTP at /mcp plus the REST API at /v1).
    Serve {
        /// Speak MCP on stdin/stdout.
        #[arg(long, conflicts_with = "http")]
        stdio: bool,
        /// Listen for HTTP on this address, e.g. 127.0.0.1:8080 or localhost:8080.
        #[arg(long, value_name = "ADDR", value_parser = listen_address)]
        http: Option<std::net::SocketAddr>,
        /// Bearer token HTTP clients must send (required off loopback).
        #[arg(long, env = "QUIVER_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// A browser origin to allow besides loopback ones (repeatable).
        #[arg(long = "allow-origin", value_name = "ORIGIN")]
        allow_origins: Vec<String>,
        /// A `Host` name to allow besides loopback ones and the bound address (repeatable;
        /// `name` or `name:port`), for a loopback server reached through a proxy by name.
        #[arg(long = "allow-host", value_name = "NAME")]
        allow_hosts: Vec<String>,
        /// Do not watch the folders for changes (hot reload is on by default).
        #[arg(long)]
        no_watch: bool,
        /// Serve Prometheus metrics at http://ADDR/metrics beside --stdio (with --http they are
        /// at /metrics already). Loopback only, unless --token is set.
        #[arg(long, value_name = "ADDR", value_parser = listen_address, requires = "stdio")]
        metrics: Option<std::net::SocketAddr>,
        /// On SIGTERM or Ctrl-C, with --http: how long the requests in flight have to finish
        /// (new connections are refused at once, /readyz answers 503); then they are cut
        /// [default: 10].
        #[arg(long, value_name = "SECONDS", requires = "http")]
        drain_seconds: Option<u64>,
    },
}

fn main() -> ExitCode {
    let cli = parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let serving = matches!(cli.command, Command::Serve { .. } | Command::Watch);
    // The exporter sends on the runtime, and is flushed before it stops.
    let exporter = {
        let _entered = runtime.enter();
        match init_logging(cli.verbose, cli.log_format, serving, &commands::telemetry_settings(&cli)) {
            Ok(exporter) => exporter,
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::FAILURE;
            }
        }
    };
    let code = runtime.block_on(commands::run(cli));
    drop(exporter);
    match code {
        Ok(code) => code,
        Err(error) => {
            // An error can quote a guest, an upstream server or a file.
            eprintln!("error: {}", output::shown(&error.to_string()));
            if let Some(remedy) = error.remedy() {
                eprintln!("fix: {}", output::shown(&remedy));
            }
            ExitCode::FAILURE
        }
    }
}

/// The command line. `quiver new` writes a project and builds no host, so
/// its help lists its own options only, not the host's global ones.
fn parse() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let command = Cli::command();
    // Hidden copies of the host's global options in `new` (clap propagates
    // a global option only where no argument has its name).
    let hidden: Vec<clap::Arg> = command
        .get_arguments()
        .filter(|a| a.is_global_set() && !matches!(a.get_id().as_str(), "verbose" | "help" | "version"))
        .map(|a| a.clone().hide(true))
        .collect();
    let command = command.mut_subcommand("new", |new| new.args(hidden));
    Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit())
}

/// `ADDR` as an IP and port, or a host name (`localhost`) and port,
/// resolved now (its IPv4 address first).
fn listen_address(text: &str) -> std::result::Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    let addrs: Vec<std::net::SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| format!("`{text}` is not an address and port (e.g. 127.0.0.1:8080, localhost:8080): {e}"))?
        .collect();
    addrs.iter().find(|a| a.is_ipv4()).or(addrs.first()).copied().ok_or_else(|| format!("`{text}` resolves to nothing"))
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    /// One line of text per event, for people.
    Text,
    /// One JSON object per line, with stable keys.
    Json,
}

/// Log to stderr (stdout carries results, or MCP on stdio). `RUST_LOG`
/// decides when set. Otherwise a static filter by target (an `EnvFilter`
/// with an info directive once added ~25 µs to a stdio round trip; a
/// `Targets` filter costs nothing for what it leaves out): warnings from
/// everyone; what a running service reports at info (each call, reloads,
/// upstream servers coming and going) when `serving`; with `-v` every info
/// line of Quiver's own modules, with `-vv` their debug lines, never the
/// engine's (cranelift and wasmtime print thousands of lines a call).
///
/// With an OTLP endpoint configured, Quiver's spans also go to the
/// exporter (see `quiver::telemetry::traces`), which is returned to be
/// kept while the program runs.
fn init_logging(
    verbose: u8,
    format: LogFormat,
    serving: bool,
    telemetry: &quiver::telemetry::TelemetrySettings,
) -> Result<Option<quiver::telemetry::Exporter>, quiver::telemetry::TelemetryError> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let layer = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer().with_ansi(ansi).with_writer(std::io::stderr).boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .boxed(),
    };
    let (traces, exporter) = quiver::telemetry::traces::layer(telemetry)?.unzip();
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
        tracing_subscriber::registry().with(traces).with(layer.with_filter(filter)).init();
        return Ok(exporter);
    }
    use tracing_subscriber::filter::{LevelFilter, Targets};
    let own = match verbose {
        0 => LevelFilter::WARN,
        1 => LevelFilter::INFO,
        _ => LevelFilter::DEBUG,
    };
    let mut filter = Targets::new().with_default(LevelFilter::WARN).with_target("quiver", own);
    if serving {
        for target in ["quiver::calls", "quiver::reload", "quiver::upstream", "quiver::faces"] {
            filter = filter.with_target(target, own.max(LevelFilter::INFO));
        }
    }
    tracing_subscriber::registry().with(traces).with(layer.with_filter(filter)).init();
    Ok(exporter)
}
