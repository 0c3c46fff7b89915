//! `quiver new rust|python|js NAME`: write a plugin project that builds with
//! one command and passes `quiver check` as written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use quiver::Result;

/// The languages `quiver new` writes projects in.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Language {
    /// Rust with quiver-sdk (`cargo build --release --target wasm32-wasip2`).
    Rust,
    /// Python with componentize-py and `quiver_plugin.py` (`sh build.sh`).
    Python,
    /// JavaScript with zod, esbuild and componentize-js (`sh build.sh`).
    Js,
}

/// What a Rust project's plugin is.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub(crate) enum PluginKind {
    /// A built-in tool: no network, no database.
    #[default]
    Tool,
    /// An API connector: HTTP through the host, to an instance's `base_url`.
    Connector,
    /// A database adapter: SQL through the host, to a configured database.
    Database,
}

/// The WIT contract, written into Python and JavaScript projects (their
/// componentizers read it).
const WIT: &[(&str, &str)] = &[
    ("types.wit", include_str!("../../../../wit/types.wit")),
    ("worlds.wit", include_str!("../../../../wit/worlds.wit")),
    ("deps/cli.wit", include_str!("../../../../wit/deps/cli.wit")),
    ("deps/clocks.wit", include_str!("../../../../wit/deps/clocks.wit")),
    ("deps/filesystem.wit", include_str!("../../../../wit/deps/filesystem.wit")),
    ("deps/http.wit", include_str!("../../../../wit/deps/http.wit")),
    ("deps/io.wit", include_str!("../../../../wit/deps/io.wit")),
    ("deps/random.wit", include_str!("../../../../wit/deps/random.wit")),
    ("deps/sockets.wit", include_str!("../../../../wit/deps/sockets.wit")),
];

/// Write the project of plugin `name` in `language` into `dir` (default:
/// `./NAME`), which must not exist yet. `sdk` is the quiver-sdk folder a
/// Rust project is patched to use (default: this build's, if it is there;
/// none once quiver-sdk is on crates.io).
pub(crate) fn create(
    language: Language,
    kind: PluginKind,
    name: &str,
    dir: Option<&Path>,
    sdk: Option<&Path>,
) -> Result<ExitCode> {
    if !matches!((language, kind), (_, PluginKind::Tool) | (Language::Rust, _)) {
        return Err(quiver::Error::config(
            "--kind",
            "Python and JavaScript plugins are tools for now (their helpers have no HTTP or SQL yet): \
             write a connector or a database adapter in Rust",
        ));
    }
    if let Some(problem) = quiver::contract::plugin_name_problem(name) {
        // `my_tool`: the name that would do.
        let dashed = name.to_ascii_lowercase().replace('_', "-");
        let suggestion = if dashed != name && quiver::contract::plugin_name_problem(&dashed).is_none() {
            format!("; try `{dashed}`")
        } else {
            String::new()
        };
        return Err(quiver::Error::config("NAME", format!("{problem}{suggestion}")));
    }
    let dir = dir.map(Path::to_owned).unwrap_or_else(|| PathBuf::from(name));
    if dir.exists() {
        return Err(quiver::Error::config("DIR", format!("`{}` already exists", dir.display())));
    }
    let module = name.replace('-', "_");
    let fill = |template: &str, patch: &str| {
        let mut options = Vec::new();
        if module != name {
            options.push(format!("name = \"{name}\""));
        }
        match kind {
            PluginKind::Tool => {}
            PluginKind::Connector => options.push("kind = \"connector\"".into()),
            PluginKind::Database => options.push("kind = \"database\"".into()),
        }
        let attributes = if options.is_empty() { String::new() } else { format!("({})", options.join(", ")) };
        template
            .replace("{name}", name)
            .replace("{module}", &module)
            .replace("{file}", &module)
            .replace("{attributes}", &attributes)
            .replace("{patch}", patch)
    };
    let files: Vec<(String, String)> = match language {
        Language::Rust => {
            let source = match kind {
                PluginKind::Tool => include_str!("templates/rust/lib.rs.in"),
                PluginKind::Connector => include_str!("templates/rust/connector.rs.in"),
                PluginKind::Database => include_str!("templates/rust/database.rs.in"),
            };
            let sdk = sdk.map(Path::to_owned).or_else(|| {
                let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk");
                built.join("Cargo.toml").is_file().then(|| built.canonicalize().unwrap_or(built))
            });
            let patch = match sdk {
                Some(sdk) => format!(
                    "\n# quiver-sdk is not on crates.io yet: use a copy of its source.\n[patch.crates-io]\nquiver-sdk = {{ path = {:?} }}\n",
                    sdk.display().to_string()
                ),
                None => String::new(),
            };
            vec![
                ("Cargo.toml".into(), fill(include_str!("templates/rust/Cargo.toml.in"), &patch)),
                ("src/lib.rs".into(), fill(source, "")),
                ("README.md".into(), fill(include_str!("templates/rust/README.md.in"), "")),
            ]
        }
        Language::Python => {
            let mut files = vec![
                ("app.py".into(), fill(include_str!("templates/python/app.py.in"), "")),
                ("build.sh".into(), fill(include_str!("templates/python/build.sh.in"), "")),
                ("README.md".into(), fill(include_str!("templates/python/README.md.in"), "")),
                ("quiver_plugin.py".into(), include_str!("../../../../sdk/python/quiver_plugin.py").into()),
                ("_quiver_native.py".into(), include_str!("../../../../sdk/python/_quiver_native.py").into()),
            ];
            files.extend(WIT.iter().map(|(path, text)| (format!("wit/{path}"), (*text).to_owned())));
            files
        }
        Language::Js => {
            let mut files = vec![
                ("app.js".into(), fill(include_str!("templates/js/app.js.in"), "")),
                ("package.json".into(), fill(include_str!("templates/js/package.json.in"), "")),
                ("build.sh".into(), fill(include_str!("templates/js/build.sh.in"), "")),
                ("README.md".into(), fill(include_str!("templates/js/README.md.in"), "")),
                ("quiver_plugin.js".into(), include_str!("../../../../sdk/js/quiver_plugin.js").into()),
            ];
            files.extend(WIT.iter().map(|(path, text)| (format!("wit/{path}"), (*text).to_owned())));
            files
        }
    };
    for (path, text) in &files {
        let path = dir.join(path);
        let io = |e: std::io::Error| quiver::Error::Io { path: path.display().to_string(), message: e.to_string() };
        std::fs::create_dir_all(path.parent().unwrap_or(&dir)).map_err(io)?;
        std::fs::write(&path, text).map_err(io)?;
    }
    let build = match language {
        Language::Rust => format!(
            "cargo build --release --target wasm32-wasip2 && quiver check target/wasm32-wasip2/release/{module}.wasm"
        ),
        Language::Python | Language::Js => "sh build.sh".to_owned(),
    };
    println!("created {} ({} files); build it with: cd {} && {build}", dir.display(), files.len(), dir.display());
    Ok(ExitCode::SUCCESS)
}
