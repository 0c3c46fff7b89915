//! The shared harness of Quiver's integration tests.
//!
//! The fixture components under `tests/fixtures/` are built once per test
//! build by `build.rs` (not per test); [`fixtures`] holds their paths.
//! [`TestHost`] builds a host over a temporary plugins folder and a
//! temporary compile cache, the way production builds one.

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
    bundled: bool,
    config: String,
    cache: Option<PathBuf>,
}

impl TestHost {
    /// Start with an empty plugins folder, no bundled plugins, small pools.
    pub fn builder() -> TestHostBuilder {
        TestHostBuilder::default()
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

    /// Use this compile-cache folder instead of a fresh one.
    pub fn cache_dir(mut self, dir: &Path) -> Self {
        self.cache = Some(dir.to_owned());
        self
    }

    /// Write the files and build the host.
    pub fn build(self) -> TestHost {
        self.try_build().expect("build the test host")
    }

    /// Write the files and build the host, returning its error.
    pub fn try_build(self) -> quiver::Result<TestHost> {
        let plugins = tempfile::tempdir().expect("temp plugins dir");
        let cache = tempfile::tempdir().expect("temp cache dir");
        for (name, bytes) in &self.files {
            std::fs::write(plugins.path().join(name), bytes).expect("write plugin file");
        }
        let toml = format!("[engine]\nmax_concurrency = 16\n{}", self.config);
        let mut config = Config::parse(&toml, plugins.path())?;
        config.plugins_dir = Some(plugins.path().to_owned());
        let mut builder =
            Host::builder().config(config).cache_dir(Some(self.cache.unwrap_or_else(|| cache.path().to_owned())));
        if self.bundled {
            builder = builder.bundled();
        }
        Ok(TestHost { host: builder.build()?, plugins, cache })
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
