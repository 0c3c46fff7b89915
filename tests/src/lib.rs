//! The shared harness of Quiver's integration tests.
//!
//! The fixture components under `tests/fixtures/` are built once per test
//! build by `build.rs` (not per test); [`fixtures`] holds their paths.
//! [`TestHost`] builds a host over a temporary plugins folder and a
//! temporary compile cache, the way production builds one.

pub mod databases;
pub mod guests;
pub mod mcp_servers;
pub mod nginx;
pub mod oauth;
pub mod otlp;
pub mod paraphrases;
pub mod postgres;
pub mod prometheus;
pub mod redis;
pub mod registry;
pub mod scale;
pub mod servers;

use std::path::{Path, PathBuf};

use quiver::{Config, Host};

/// Paths of the fixture components, one constant per crate in `tests/fixtures/`.
pub mod fixtures {
    include!(concat!(env!("OUT_DIR"), "/fixtures.rs"));

    /// The path of the fixture called `name`; panics if there is none.
    pub fn path(name: &str) -> &'static str {
        ALL.iter().find(|(n, _)| *n == name).map(|(_, p)| *p).unwrap_or_else(|| panic!("no fixture `{name}`"))
    }
}

/// A host over temporary folders; the folders live as long as it does.
pub struct TestHost {
    /// The host under test.
    pub host: Host,
    /// The plugins folder it serves.
    pub plugins: tempfile::TempDir,
    /// Its compile cache.
    pub cache: tempfile::TempDir,
}

/// Builds a [`TestHost`].
#[derive(Default)]
pub struct TestHostBuilder {
    files: Vec<(String, Vec<u8>)>,
    embedded: Vec<(&'static str, &'static [u8])>,
    bundled: bool,
    config: String,
    cache: Option<PathBuf>,
    skills: Option<PathBuf>,
    mcp: Option<PathBuf>,
    keep_bytes: bool,
    demo: bool,
}

/// A folder of `tests/data/`.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data").join(name)
}

/// A folder of the real-tool corpus vendored in `tests/data/corpus`
/// (`mcp-tools`: 950 MCP tool definitions of 28 servers, with their
/// sources and licences; `bfcl`: Berkeley Function-Calling Leaderboard
/// queries with their ground truth).
pub fn corpus(name: &str) -> PathBuf {
    data("corpus").join(name)
}

impl TestHost {
    /// Start with an empty plugins folder, no bundled plugins, small pools.
    pub fn builder() -> TestHostBuilder {
        TestHostBuilder::default()
    }

    /// A host with every kind of resource at once: the bundled tools, a
    /// connector and a database adapter (fixtures), skills and a saved MCP
    /// list, configured with `config`.
    pub fn every_kind(config: &str) -> TestHost {
        TestHost::builder()
            .bundled()
            .fixture("connector")
            .fixture("database")
            .skills(data("skills"))
            .mcp(data("mcp"))
            .config(config)
            .build()
    }
}

/// The `misbehave` fixture, which does whatever a call asks of it, and the
/// checks the call and sandbox tests share.
pub mod misbehave {
    use super::TestHost;

    /// A host serving only `misbehave`, configured with `config`.
    pub fn host(config: &str) -> TestHost {
        TestHost::builder().fixture("misbehave").config(config).build()
    }

    /// The host still serves `misbehave` (after whatever went before).
    pub async fn still_serves(host: &quiver::Host) {
        let out = host.call("misbehave", "echo", r#"{"text": "ok"}"#).await.unwrap();
        assert_eq!(out, "ok");
    }

    /// The error of calling `action` with `input`, which must fail, after
    /// which the host must still serve.
    pub async fn call_error(host: &quiver::Host, action: &str, input: &str) -> quiver::Error {
        let error = host.call("misbehave", action, input).await.unwrap_err();
        still_serves(host).await;
        error
    }
}

impl TestHostBuilder {
    /// Put fixture `name` in the plugins folder as `name.wasm`.
    pub fn fixture(self, name: &str) -> Self {
        let bytes = std::fs::read(fixtures::path(name)).expect("read fixture");
        self.file(&format!("{name}.wasm"), bytes)
    }

    /// Put a file in the plugins folder.
    pub fn file(mut self, file_name: &str, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.push((file_name.to_owned(), bytes.into()));
        self
    }

    /// Serve `bytes` as a plugin embedded in the program (as the bundled
    /// ones are), under `file_name`.
    pub fn embedded(mut self, file_name: &'static str, bytes: Vec<u8>) -> Self {
        // A test host lives as long as its test: leaking the bytes gives
        // them the `'static` lifetime embedded plugins have.
        self.embedded.push((file_name, Box::leak(bytes.into_boxed_slice())));
        self
    }

    /// Also serve the bundled first-party plugins.
    pub fn bundled(mut self) -> Self {
        self.bundled = true;
        self
    }

    /// Extra TOML configuration (e.g. `[plugins.x]` sections).
    pub fn config(mut self, toml: &str) -> Self {
        self.config.push_str(toml);
        self.config.push('\n');
        self
    }

    /// Also serve the bundled demo database (`chinook`), as the CLI does.
    pub fn demo(mut self) -> Self {
        self.demo = true;
        self
    }

    /// Serve the skills in `dir`.
    pub fn skills(mut self, dir: PathBuf) -> Self {
        self.skills = Some(dir);
        self
    }

    /// Serve the saved MCP tool lists in `dir`.
    pub fn mcp(mut self, dir: PathBuf) -> Self {
        self.mcp = Some(dir);
        self
    }

    /// Keep the plugins' bytes from the first scan (as a watched host does).
    pub fn keep_plugin_bytes(mut self) -> Self {
        self.keep_bytes = true;
        self
    }

    /// Use this compile-cache folder instead of a fresh one.
    pub fn cache_dir(mut self, dir: &Path) -> Self {
        self.cache = Some(dir.to_owned());
        self
    }

    /// Write the files and build the host.
    pub fn build(self) -> TestHost {
        self.try_build().expect("build the test host")
    }

    /// Build a host whose configured `section` (e.g. `[connectors.books]`)
    /// cannot be set up: it fails alone (the host builds and serves the
    /// rest), and this is its rejection, as `/v1/status` and `quiver check`
    /// report it.
    pub fn refused(self, section: &str) -> String {
        let t = self.build();
        let catalog = t.host.catalog();
        let rejection = catalog.rejected().iter().find(|r| r.origin == section);
        let rejection = rejection.unwrap_or_else(|| panic!("{section} is not refused: {:?}", catalog.rejected()));
        rejection.error.to_string()
    }

    /// Write the files and build the host, returning its error.
    pub fn try_build(self) -> quiver::Result<TestHost> {
        let plugins = tempfile::tempdir().expect("temp plugins dir");
        let cache = tempfile::tempdir().expect("temp cache dir");
        for (name, bytes) in &self.files {
            std::fs::write(plugins.path().join(name), bytes).expect("write plugin file");
        }
        // After the caller's text, whose top-level keys must come first.
        let engine = if self.config.contains("[engine]") { "" } else { "[engine]\nmax_concurrency = 16\n" };
        let toml = format!("{}\n{engine}", self.config);
        let mut config = Config::parse(&toml, plugins.path())?;
        config.plugins_dir = Some(plugins.path().to_owned());
        config.skills_dir = self.skills;
        config.mcp_dir = self.mcp;
        let mut builder =
            Host::builder().config(config).cache_dir(Some(self.cache.unwrap_or_else(|| cache.path().to_owned())));
        if self.bundled {
            builder = builder.bundled();
        }
        for (file_name, bytes) in self.embedded {
            builder = builder.embedded(file_name, bytes);
        }
        if self.keep_bytes {
            builder = builder.keep_plugin_bytes();
        }
        if self.demo {
            builder = builder.demo_databases();
        }
        Ok(TestHost { host: builder.build()?, plugins, cache })
    }
}

/// Builds of the `versioned` fixture and ways to publish them, for the
/// hot-reload tests and benchmarks.
pub mod builds {
    use std::path::Path;
    use std::time::Duration;

    use quiver::{Catalog, Host};

    /// `bytes` with every occurrence of `from` replaced by `to` (same length).
    pub fn patched(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
        assert_eq!(from.len(), to.len(), "a patch keeps the length");
        let mut out = bytes.to_vec();
        let mut found = 0;
        let mut i = 0;
        while i + from.len() <= out.len() {
            if &out[i..i + from.len()] == from.as_bytes() {
                out[i..i + from.len()].copy_from_slice(to.as_bytes());
                found += 1;
                i += from.len();
            } else {
                i += 1;
            }
        }
        assert!(found > 0, "`{from}` does not occur");
        out
    }

    /// Build `generation` of the `versioned` fixture: its stub, manifest
    /// and answers say `gen-NNNN`.
    pub fn versioned(generation: u32) -> Vec<u8> {
        let bytes = std::fs::read(super::fixtures::path("versioned")).expect("read the versioned fixture");
        if generation == 0 { bytes } else { patched(&bytes, "gen-0000", &format!("gen-{generation:04}")) }
    }

    /// The `versioned` fixture under another nine-character name.
    pub fn renamed(name: &str) -> Vec<u8> {
        patched(&versioned(0), "versioned", name)
    }

    /// `bytes` with garbage in the middle of the core module's code: the
    /// stub still reads, but the component does not compile.
    pub fn with_broken_code(bytes: &[u8]) -> Vec<u8> {
        let code = wasmparser::Parser::new(0)
            .parse_all(bytes)
            .find_map(|payload| match payload {
                Ok(wasmparser::Payload::CodeSectionStart { range, .. }) => Some(range),
                _ => None,
            })
            .expect("a code section");
        let mut out = bytes.to_vec();
        let middle = code.start + code.len() / 2;
        out[middle..middle + 16].fill(0xff);
        out
    }

    /// Publish `bytes` as `dir/name` the way a careful operator does: write
    /// a hidden temporary file, sync it, rename it into place.
    pub fn publish(dir: &Path, name: &str, bytes: &[u8]) {
        use std::io::Write;
        let temporary = dir.join(format!(".{name}.tmp"));
        let mut file = std::fs::File::create(&temporary).expect("create the temporary file");
        file.write_all(bytes).expect("write the temporary file");
        file.sync_all().expect("sync the temporary file");
        std::fs::rename(&temporary, dir.join(name)).expect("rename into place");
    }

    /// The `gen-NNNN` that plugin `name` advertises in `catalog`, if served.
    pub fn advertised(catalog: &Catalog, name: &str) -> Option<String> {
        let description = &catalog.get(name)?.stub().description;
        description.find("gen-").map(|at| description[at..at + 8].to_owned())
    }

    /// Wait (without polling) until the catalog satisfies `condition`;
    /// panics after a minute, which only a broken watcher takes.
    pub async fn wait_for(host: &Host, condition: impl Fn(&Catalog) -> bool) {
        let mut versions = host.subscribe();
        let wait = async {
            loop {
                if condition(&host.catalog()) {
                    return;
                }
                versions.changed().await.expect("the host is alive");
            }
        };
        tokio::time::timeout(Duration::from_secs(60), wait)
            .await
            .expect("the catalog did not reach the expected state within a minute");
    }
}

/// A one-thread HTTP server on loopback that answers every request with
/// `200 OK` and a body echoing the request line. Returns its base URL.
pub fn http_server() -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let body = format!("you sent: {}", request_line.trim());
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// A one-thread HTTP server on loopback that answers every request with
/// `status` and a chat-completion body whose message content is `content`
/// (an OpenAI-compatible endpoint for selector tests). Returns its URL.
pub fn chat_server(status: u16, content: &str) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    let body =
        serde_json::json!({ "choices": [{ "message": { "role": "assistant", "content": content } }] }).to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
            let mut length = 0usize;
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut request = vec![0; length];
            let _ = reader.read_exact(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// The BFCL retrieval corpus (`tests/data/corpus/bfcl`), for tests and benchmarks.
pub mod bfcl {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use quiver::catalog::{Category, ToolRecord};
    use quiver::contract::Access;
    use quiver::disclosure::search::{Arm, SearchIndex};

    use crate::corpus;

    #[derive(Deserialize)]
    struct Row {
        query: String,
        tools: Vec<Tool>,
        expected: Vec<String>,
    }

    #[derive(Deserialize)]
    struct Tool {
        name: String,
        #[serde(default)]
        description: String,
        parameters: serde_json::Value,
    }

    /// The rows of a BFCL file and every distinct tool of all rows.
    pub fn bfcl(file: &str) -> (Vec<(String, String)>, Vec<ToolRecord>) {
        let text = std::fs::read_to_string(corpus("bfcl").join(file)).expect("the corpus is in tests/data/corpus");
        let mut pool: BTreeMap<(String, String), ToolRecord> = BTreeMap::new();
        let mut queries = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let row: Row = serde_json::from_str(line).expect("a BFCL row");
            for tool in row.tools {
                pool.entry((tool.name.clone(), tool.description.clone())).or_insert_with(|| ToolRecord {
                    name: tool.name.clone(),
                    origin: String::new(),
                    action: tool.name.clone(),
                    summary: tool.description.clone(),
                    description: tool.description.clone(),
                    category: Category::Mcp,
                    access: Access::Read,
                    input_schema: Some(tool.parameters),
                    output_schema: None,
                });
            }
            queries.push((row.query, row.expected[0].clone()));
        }
        (queries, pool.into_values().collect())
    }

    /// Recall@k for k = 1, 3, 6, 10 and the mean reciprocal rank of `ranked`
    /// (the names a ranking gives for a query, best first), counted over
    /// distinct names: a catalog holds one tool per name, and the pool keeps
    /// each wording BFCL gives a tool as its own record (159 of the 457
    /// names have several), so a name ranked again is the same tool found
    /// again, not another candidate.
    pub fn recall(queries: &[(String, String)], mut ranked: impl FnMut(&str) -> Vec<String>) -> ([f64; 4], f64) {
        let mut hits = [0usize; 4];
        let mut mrr = 0.0;
        for (query, expected) in queries {
            if let Some(rank) = distinct(ranked(query)).iter().take(10).position(|name| name == expected) {
                mrr += 1.0 / (rank + 1) as f64;
                for (i, k) in [1, 3, 6, 10].into_iter().enumerate() {
                    hits[i] += usize::from(rank < k);
                }
            }
        }
        let n = queries.len() as f64;
        (hits.map(|h| h as f64 / n), mrr / n)
    }

    /// `names` with every repeat of a name left out, in order.
    fn distinct(names: Vec<String>) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        names.into_iter().filter(|name| seen.insert(name.clone())).collect()
    }

    /// Records a ranking is asked for so that ten distinct names remain
    /// (no name has more than 16 wordings in the pool).
    pub const RANKED: usize = 160;

    /// The first 10 distinct names `index` ranks for `query` with `arm`.
    pub fn top10(index: &SearchIndex, arm: Arm, query: &str) -> Vec<String> {
        let names = index.search_with(arm, query, RANKED, |_| true).into_iter().map(|(entry, _)| entry.name.clone());
        distinct(names.collect()).into_iter().take(10).collect()
    }
}
