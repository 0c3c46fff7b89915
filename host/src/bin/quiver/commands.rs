//! The commands of the `quiver` binary.

use std::process::ExitCode;

use quiver::catalog::printable;
use quiver::disclosure::tokens::Cost;
use quiver::{Config, Host, Result};

use crate::output::{print_json, shown};
use crate::{Cli, Command, call, listing};

pub(crate) async fn run(cli: Cli) -> Result<ExitCode> {
    // Writing a project needs no host.
    if let Command::New { language, kind, name, dir, sdk } = &cli.command {
        return crate::new::create(*language, *kind, name, dir.as_deref(), sdk.as_deref());
    }
    match &cli.command {
        Command::Push { file, reference, insecure, username, password_env, docker_config } => {
            let entry = quiver::load::oci::RawOci {
                reference: reference.clone(),
                insecure: *insecure,
                username: username.clone(),
                password_env: password_env.clone(),
                docker_config: docker_config.clone(),
                key: None,
            };
            return crate::oci::push(file, reference, entry).await;
        }
        Command::Oci { command: crate::oci::OciCommand::Resolve } => {
            return crate::oci::resolve(&load_config(&cli)?).await;
        }
        _ => {}
    }
    let host = build_host(&cli)?;
    // Every command takes `--agent`: a profile that does not exist is an
    // error, never the operator's view in silence.
    if let Some(agent) = cli.agent.as_deref() {
        host.policy(Some(agent))?;
    }
    match cli.command {
        Command::List { json } => listing::list(&host, json),
        Command::Prompt { json } => prompt(&host, cli.agent.as_deref(), json),
        Command::Search { query, limit, detail, json } => {
            search(&host, cli.agent.as_deref(), &query, limit, &detail, json).await
        }
        Command::Tokens { json } => tokens(&host, cli.agent.as_deref(), json).await,
        Command::Describe { plugin, action } => listing::describe(&host, cli.agent.as_deref(), plugin, action).await,
        Command::Call { plugin, action, input } => {
            // `call calc__evaluate '{...}'`: the name models see.
            let (action, input) = match action {
                Some(action) if !action.trim_start().starts_with(['{', '@']) && action != "-" => (Some(action), input),
                json => (None, json),
            };
            let input = call::input(input.as_deref())?;
            let output = match cli.agent.as_deref() {
                Some(agent) => call::as_agent(&host, agent, &plugin, action.as_deref(), &input).await?,
                None => call::as_operator(&host, &plugin, action.as_deref(), &input).await?,
            };
            print_json(&output);
            Ok(ExitCode::SUCCESS)
        }
        Command::New { .. } | Command::Push { .. } => unreachable!("handled above"),
        Command::Oci { command } => crate::oci::with_host(command, &host).await,
        Command::Check { file: Some(file) } => check(&host, &file).await,
        Command::Check { file: None } => check_all(&host),
        Command::Package { file, output } => package(&host, &file, output.as_deref()).await,
        Command::Precompile => precompile(&host).await,
        Command::Watch => watch(&host).await,
        Command::Serve { stdio, http, token, allow_origins, allow_hosts, no_watch, metrics, drain_seconds } => {
            // clap's `requires` counts a flag's default as given: say it here.
            let misplaced = match (stdio, metrics.is_some(), drain_seconds.is_some()) {
                (false, true, _) => Some("--metrics serves beside --stdio (with --http, /metrics is served already)"),
                (true, _, true) => Some("--drain-seconds applies to --http"),
                _ => None,
            };
            if let Some(message) = misplaced {
                eprintln!("error: {message}");
                return Ok(ExitCode::from(2));
            }
            let _watcher = if no_watch { None } else { Some(host.watch()?) };
            if stdio {
                let stop_metrics = tokio_util::sync::CancellationToken::new();
                if let Some(addr) = metrics {
                    metrics_beside(&host, addr, token, stop_metrics.clone()).await?;
                }
                // Until the client closes stdin, or a signal: then the
                // upstream servers are stopped before Quiver exits.
                tokio::select! {
                    served = quiver::faces::serve_stdio(&host, cli.agent.clone()) => served?,
                    () = terminated() => tracing::info!(target: "quiver::faces", "shutting down on a signal"),
                }
                stop_metrics.cancel();
                host.shutdown_upstreams().await;
                return Ok(ExitCode::SUCCESS);
            }
            let Some(addr) = http else {
                eprintln!("error: choose a transport: --stdio, or --http ADDR (e.g. 127.0.0.1:8080)");
                return Ok(ExitCode::from(2));
            };
            let bind = quiver::auth::Bind {
                loopback: addr.ip().is_loopback(),
                local_resource: (addr.port() != 0).then(|| format!("http://{addr}/mcp")),
            };
            let env = |var: &str| std::env::var(var).ok();
            let authenticator =
                quiver::auth::Authenticator::new(host.auth_settings(), token.clone(), &bind, &env).await?;
            if let Some(oauth) = authenticator.oauth() {
                for profile in oauth.profiles() {
                    host.open_session(Some(profile))
                        .map_err(|e| quiver::Error::config("[auth] subjects/scopes", e.to_string()))?;
                }
            }
            let options = quiver::faces::http::HttpOptions {
                addr,
                token,
                authenticator: Some(std::sync::Arc::new(authenticator)),
                allowed_origins: allow_origins,
                allowed_hosts: allow_hosts,
                agent: cli.agent.clone(),
                drain: drain_seconds.map_or(quiver::faces::http::DEFAULT_DRAIN, std::time::Duration::from_secs),
                ..Default::default()
            };
            let shutdown = tokio_util::sync::CancellationToken::new();
            let (on_signal, drain) = (shutdown.clone(), options.drain);
            tokio::spawn(async move {
                terminated().await;
                tracing::info!(
                    target: "quiver::faces",
                    drain_seconds = drain.as_secs_f64(),
                    "draining on a signal: new connections are refused, running calls have the drain period to finish"
                );
                on_signal.cancel();
            });
            let who = match options.authenticator.as_deref() {
                Some(quiver::auth::Authenticator::Oauth(oauth)) => {
                    format!("; OAuth access tokens from {}", oauth.issuer)
                }
                Some(quiver::auth::Authenticator::Token(_)) => "; bearer token required".to_owned(),
                _ => String::new(),
            };
            let served = quiver::faces::http::serve(&host, &options, shutdown, |addr| {
                eprintln!(
                    "quiver: MCP at http://{addr}/mcp, REST at http://{addr}/v1, dashboard at http://{addr}/ui/{who}"
                );
            })
            .await;
            host.shutdown_upstreams().await;
            served?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Serve `/metrics` on `addr` in the background until `stop`; an address
/// that cannot be served is an error now, before anything else starts.
async fn metrics_beside(
    host: &Host,
    addr: std::net::SocketAddr,
    token: Option<String>,
    stop: tokio_util::sync::CancellationToken,
) -> Result<()> {
    let (bound, at) = tokio::sync::oneshot::channel();
    let host = host.clone();
    let served = tokio::spawn(async move {
        let bound = move |addr| {
            let _ = bound.send(addr);
        };
        quiver::faces::http::serve_metrics(&host, addr, token, stop, bound).await
    });
    match at.await {
        Ok(addr) => {
            eprintln!("quiver: metrics at http://{addr}/metrics");
            Ok(())
        }
        Err(_) => served.await.map_err(|e| quiver::Error::internal("metrics server", e))?,
    }
}

/// The config file `cli` names, or `quiver.toml` when there is one.
fn config_path(cli: &Cli) -> Option<std::path::PathBuf> {
    cli.config.clone().or_else(|| {
        let default = std::path::PathBuf::from("quiver.toml");
        default.is_file().then_some(default)
    })
}

/// The `[telemetry]` table of the config file, read before logging starts
/// (the exporter is a layer of the log's subscriber); a file that does not
/// load is reported when the host is built.
pub(crate) fn telemetry_settings(cli: &Cli) -> quiver::telemetry::TelemetrySettings {
    config_path(cli).and_then(|path| Config::load(&path).ok()).map(|c| c.telemetry).unwrap_or_default()
}

/// The configuration file (if any) with the command line's folders over it.
fn load_config(cli: &Cli) -> Result<Config> {
    let config_path = config_path(cli);
    let mut config = match &config_path {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    if let Some(dir) = &cli.plugins {
        config.plugins_dir = Some(dir.clone());
    }
    if let Some(dir) = &cli.skills {
        config.skills_dir = Some(dir.clone());
    }
    if let Some(dir) = &cli.mcp {
        config.mcp_dir = Some(dir.clone());
    }
    if let Some(file) = &cli.mcp_config {
        config.add_mcp_config(file)?;
    }
    Ok(config)
}

fn build_host(cli: &Cli) -> Result<Host> {
    let mut config = load_config(cli)?;
    // Audit lines on stdout only where stdout is free: `serve --http`.
    // Elsewhere it carries MCP (stdio) or results, and they go to stderr.
    let stdout_free = matches!(cli.command, Command::Serve { stdio: false, http: Some(_), .. });
    if config.audit.stream == Some(quiver::config::AuditStream::Stdout) && !stdout_free {
        config.audit.stream = Some(quiver::config::AuditStream::Stderr);
    }
    let bundled = !cli.no_bundled && config.bundled.unwrap_or(true);
    let mut builder = Host::builder().config(config);
    if bundled {
        builder = builder.bundled().demo_databases();
    }
    if cli.no_cache {
        builder = builder.cache_dir(None);
    } else if let Some(dir) = &cli.cache_dir {
        builder = builder.cache_dir(Some(dir.clone()));
    }
    builder.build()
}

async fn watch(host: &Host) -> Result<ExitCode> {
    let _watcher = host.watch()?;
    let mut versions = host.subscribe();
    let mut before = host.catalog();
    println!("v{}: {} plugins; watching (Ctrl-C to stop)", before.version(), before.len());
    loop {
        tokio::select! {
            changed = versions.changed() => {
                if changed.is_err() {
                    return Ok(ExitCode::SUCCESS);
                }
            }
            _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
        }
        let now = host.catalog();
        let mut changes = Vec::new();
        for plugin in now.plugins() {
            match before.get(plugin.name()) {
                None => changes.push(format!("+{}", plugin.name())),
                Some(old) if !std::sync::Arc::ptr_eq(old, plugin) => changes.push(format!("~{}", plugin.name())),
                Some(_) => {}
            }
        }
        changes.extend(before.plugins().filter(|p| now.get(p.name()).is_none()).map(|p| format!("-{}", p.name())));
        println!("v{}: {} plugins; {}", now.version(), now.len(), changes.join(" "));
        for rejection in now.rejected() {
            println!("  rejected: {}", printable(&rejection.error.to_string()));
        }
        for (name, stale) in now.stale() {
            let why = printable(&format!("{}: {}", stale.origin, stale.error));
            println!("  stale: {name} serves its last good version; {why}");
        }
        before = now;
    }
}

fn prompt(host: &Host, agent: Option<&str>, json: bool) -> Result<ExitCode> {
    let text = host.session(agent)?.system_prompt();
    if json {
        let tokens = Cost::of(&text);
        print_json(&serde_json::json!({ "text": text, "tokens": tokens }));
    } else {
        print!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}

async fn search(
    host: &Host,
    agent: Option<&str>,
    query: &str,
    limit: u32,
    detail: &str,
    json: bool,
) -> Result<ExitCode> {
    let mut session = host.session(agent)?;
    let outcome =
        session.call("search_tools", serde_json::json!({ "query": query, "limit": limit, "detail": detail })).await;
    if let Some(error) = outcome.error {
        return Err(error);
    }
    let hits = outcome.value().cloned().unwrap_or_default();
    if json {
        let (ranker, model) = host.ranker();
        print_json(&serde_json::json!({ "ranker": ranker, "model": model, "hits": hits }));
        return Ok(ExitCode::SUCCESS);
    }
    for hit in hits.as_array().into_iter().flatten() {
        let name = printable(hit.as_str().or_else(|| hit["name"].as_str()).unwrap_or_default());
        // Nothing passed the relevance cut: the nearest there is, said so.
        let weak = if hit["weak"] == true { " (weak)" } else { "" };
        match hit.get("summary").and_then(|s| s.as_str()) {
            Some(summary) => {
                println!("{name:<40} {:<9} {}{weak}", hit["kind"].as_str().unwrap_or_default(), printable(summary))
            }
            None => println!("{name}{weak}"),
        }
        if let Some(definition) = hit.get("definition") {
            print_parameters(definition);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A definition's parameters as text, one per line (`--json` has the
/// schema itself).
fn print_parameters(definition: &serde_json::Value) {
    let schema = definition.get("inputSchema").or_else(|| definition.get("input_schema")).unwrap_or(definition);
    let required: Vec<&str> =
        schema["required"].as_array().into_iter().flatten().filter_map(serde_json::Value::as_str).collect();
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        let kind = match &property["type"] {
            serde_json::Value::String(t) => t.clone(),
            serde_json::Value::Array(types) => {
                types.iter().filter_map(serde_json::Value::as_str).collect::<Vec<_>>().join("|")
            }
            _ if property.get("enum").is_some() || property.get("oneOf").is_some() => "one of".into(),
            _ => "any".into(),
        };
        let need = if required.contains(&name.as_str()) { ", required" } else { "" };
        let about = property["description"].as_str().and_then(|d| d.lines().next()).unwrap_or_default();
        println!("    {} ({}{need}) {}", printable(name), printable(&kind), printable(about));
    }
}

async fn tokens(host: &Host, agent: Option<&str>, json: bool) -> Result<ExitCode> {
    let report = host.token_report(agent).await?;
    if json {
        print_json(&report);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<34} {:>9} {:>6} {:>11} {:>12} {:>9}  (o200k_base tokens; cl100k_base in --json)",
        "resource", "kind", "tools", "full", "progressive", "names"
    );
    for row in &report.rows {
        println!(
            "{:<34} {:>9} {:>6} {:>11} {:>12} {:>9}",
            row.name,
            row.category.as_str(),
            row.tools,
            row.full.o200k,
            row.progressive.o200k,
            row.names.o200k
        );
    }
    for (meta_tool, cost) in &report.overhead {
        println!(
            "{:<34} {:>9} {:>6} {:>11} {:>12} {:>9}",
            format!("({meta_tool}: text, schema)"),
            "",
            "",
            "",
            cost.o200k,
            ""
        );
    }
    println!(
        "{:<34} {:>9} {:>6} {:>11} {:>12} {:>9}",
        "(instructions beside them)", "", "", "", report.instructions.o200k, ""
    );
    let tools: usize = report.rows.iter().map(|r| r.tools).sum();
    println!(
        "{:<34} {:>9} {:>6} {:>11} {:>12} {:>9}",
        "total", "", tools, report.full.o200k, report.progressive.o200k, report.names.o200k
    );
    println!(
        "progressive saves {:.2}% of the full cost (o200k_base); cl100k_base: {} -> {} ({:.2}%)",
        report.progressive.reduction_from(&report.full),
        report.full.cl100k,
        report.progressive.cl100k,
        if report.full.cl100k == 0 {
            0.0
        } else {
            100.0 * (1.0 - report.progressive.cl100k as f64 / report.full.cl100k as f64)
        }
    );
    let fit = &report.fit;
    if !fit.folded.is_empty() {
        let folded: Vec<String> = fit.folded.iter().map(|(meta, shape)| format!("{meta} ({shape})")).collect();
        println!("folded to fit the prompt budget of {} tokens: {}", fit.budget, folded.join(", "));
    }
    if let Some(overrun) = fit.overrun() {
        println!(
            "over the budget by {overrun} tokens with every section folded: {} tokens, {} of them pinned tools",
            fit.tokens, fit.pinned
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn check(host: &Host, file: &std::path::Path) -> Result<ExitCode> {
    match host.check(file).await {
        Ok(checked) => {
            let manifest = &checked.manifest;
            let count = count(manifest.actions.len(), "action");
            println!(
                "ok: {} {} ({}), {count}: {}",
                manifest.name,
                printable(&manifest.version),
                manifest.kind,
                manifest.actions.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
            );
            for skipped in &checked.skipped {
                println!("not served: `{}`: {}", skipped.export, skipped.reason);
            }
            if let Some(requests) = &checked.requests {
                print_requests(&manifest.name, requests);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            println!("rejected: {}", shown(&error.to_string()));
            if let Some(remedy) = error.remedy() {
                println!("fix: {}", shown(&remedy));
            }
            Ok(ExitCode::FAILURE)
        }
    }
}

/// What a component's policy file asks for, each line saying whether the
/// configuration grants it and, if not, the setting that would.
fn print_requests(name: &str, requests: &quiver::load::RequestsStatus) {
    println!("requests ({}: a request, never a grant; only the configuration grants):", requests.file);
    if let Some(problem) = &requests.problem {
        println!("  unreadable: {problem}");
    }
    for ask in &requests.asks {
        let what = match (ask.kind, ask.write) {
            (quiver::load::AskKind::Storage, true) => {
                format!("{} (read and write; folders are only ever read)", ask.what)
            }
            _ => ask.what.clone(),
        };
        let answer = if ask.complete {
            format!("granted: {}", ask.granted.join(", "))
        } else if ask.write && !ask.granted.is_empty() {
            format!("granted for reading only: {}", ask.granted.join(", "))
        } else if !ask.granted.is_empty() {
            format!("granted only for: {} (list each other host it may reach)", ask.granted.join(", "))
        } else {
            match ask.kind {
                quiver::load::AskKind::Storage => {
                    format!("not granted (fix: [plugins.{name}] folders = {{ \"{}\" = \"<folder>\" }})", ask.what)
                }
                quiver::load::AskKind::Network if ask.what.starts_with("*.") => format!(
                    "not granted (fix: list each host under {} it may reach in [plugins.{name}] allow_http; only a \
                     component that imports wasi:http can use it)",
                    ask.what.trim_start_matches("*.")
                ),
                quiver::load::AskKind::Network => format!(
                    "not granted (fix: [plugins.{name}] allow_http = [\"https://{}\"]; only a component that imports \
                     wasi:http can use it)",
                    ask.what
                ),
                quiver::load::AskKind::Environment => {
                    format!("not granted (fix: [plugins.{name}] config = {{ {} = \"…\" }})", ask.what)
                }
            }
        };
        println!("  {} {what}: {answer}", ask.kind);
    }
    for unread in &requests.unread {
        println!("  not read: {unread}");
    }
}

/// Everything the configuration serves, and each resource (a plugin file,
/// a database, a connector, an MCP server, a skill) that fails, with why
/// and the fix: the exit code says whether any does. Nothing is compiled
/// and no server is started.
fn check_all(host: &Host) -> Result<ExitCode> {
    let catalog = host.catalog();
    println!(
        "serving: {} plugins and instances, {} MCP servers, {} skills",
        catalog.len(),
        catalog.mcp_servers().count(),
        catalog.skills().count()
    );
    for rejection in catalog.rejected() {
        println!("failing: {}: {}", shown(&rejection.origin), shown(&rejection.error.to_string()));
        if let Some(remedy) = rejection.error.remedy() {
            println!("fix: {}", shown(&remedy));
        }
    }
    Ok(if catalog.rejected().is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

async fn package(host: &Host, file: &std::path::Path, output: Option<&std::path::Path>) -> Result<ExitCode> {
    // Compiling a large component takes seconds: say what is going on.
    eprintln!(
        "packaging {}: reading its types, or compiling it and running its describe() in the sandbox…",
        file.display()
    );
    let packaged = match host.package(file).await {
        Ok(packaged) => packaged,
        Err(error) => {
            println!("rejected: {}", shown(&error.to_string()));
            if let Some(remedy) = error.remedy() {
                println!("fix: {}", shown(&remedy));
            }
            return Ok(ExitCode::FAILURE);
        }
    };
    let output = output.unwrap_or(file);
    let m = &packaged.manifest;
    let what = format!("{} {} ({}), {}", m.name, printable(&m.version), m.kind, count(m.actions.len(), "action"));
    // A component with no Quiver contract: what was written came from its
    // types, not from a describe().
    let what = match packaged.plain {
        true => format!("{what}, from its types (a component with no Quiver contract)"),
        false => what,
    };
    if !packaged.changed && output == file {
        println!("ok: {what}: already packaged");
        return Ok(ExitCode::SUCCESS);
    }
    // Write beside the target and rename over it: a watched folder never
    // sees half a component.
    let dir = output.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let name = output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = dir.join(format!(".{name}.tmp"));
    let io = |e: std::io::Error| quiver::Error::Io { path: output.display().to_string(), message: e.to_string() };
    std::fs::write(&temporary, &packaged.bytes).map_err(io)?;
    std::fs::rename(&temporary, output).map_err(io)?;
    println!("packaged: {what} -> {}", output.display());
    Ok(ExitCode::SUCCESS)
}

fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

async fn precompile(host: &Host) -> Result<ExitCode> {
    let catalog = host.catalog();
    let bar = indicatif::ProgressBar::new(catalog.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} compiling {pos}/{len} {wide_bar} {msg}")
            .expect("valid progress template"),
    );
    let mut failed = 0;
    host.preload(|plugin, result| {
        bar.inc(1);
        bar.set_message(plugin.name().to_owned());
        if let Err(e) = result {
            failed += 1;
            bar.println(format!("failed: {}", shown(&e.to_string())));
        }
    })
    .await;
    bar.finish_and_clear();
    let stats = host.load_stats();
    eprintln!(
        "{} plugins ready ({} compiled, {} from cache, {failed} failed)",
        catalog.len() - failed,
        stats.compiled(),
        stats.cache_hits()
    );
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Ctrl-C (SIGINT) or SIGTERM, whichever comes first.
async fn terminated() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => tokio::select! {
                () = interrupt => {}
                _ = terminate.recv() => {}
            },
            Err(_) => interrupt.await,
        }
    }
    #[cfg(not(unix))]
    interrupt.await
}
