//! Third-party and hostile HTTP servers on loopback, for the connector
//! tests: [`JsonServer`] (json-server 0.17.4 from npm, installed by
//! `.ci/run` into `tests/servers/node_modules`, with a bearer-token
//! middleware), [`Prism`] (Stoplight's mock server, npm, serving real
//! OpenAPI documents from `@readme/oas-examples`) and [`Hostile`] (`tests/servers/hostile.py`: redirects,
//! slow and endless answers, header echo). Each runs on a free port, is
//! ready when it says so on its output (no sleeps), and is stopped by PID
//! when dropped. A server that cannot start fails the test.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("servers")
}

/// A free TCP port on 127.0.0.1 (the listener is closed at once).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A child process stopped (by PID) when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// json-server 0.17.4 serving a copy of a JSON database, requiring
/// `Authorization: Bearer TOKEN`; each request's trace headers are logged
/// (`tests/servers/log_headers.js`) and kept ([`JsonServer::seen`]).
pub struct JsonServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    seen: Seen,
    _process: Process,
    _dir: tempfile::TempDir,
}

/// The request lines json-server logged, and a signal for each.
type Seen = std::sync::Arc<(std::sync::Mutex<Vec<serde_json::Value>>, std::sync::Condvar)>;

impl JsonServer {
    /// Serve `db` (a JSON document of collections) behind `token`.
    pub fn start(db: &serde_json::Value, token: &str) -> JsonServer {
        let bin = servers_dir().join("node_modules/.bin/json-server");
        assert!(bin.exists(), "{} is missing: run `bash .ci/run` (it runs npm ci in tests/servers)", bin.display());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("db.json");
        std::fs::write(&file, db.to_string()).unwrap();
        let port = free_port();
        let mut child = Command::new(&bin)
            .arg(&file)
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--middlewares"])
            .arg(servers_dir().join("log_headers.js"))
            .arg(servers_dir().join("auth.js"))
            .env("QUIVER_TEST_API_TOKEN", token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start json-server: {e}"));
        let stdout = child.stdout.take().unwrap();
        let process = Process(child);
        // json-server prints `Home` then its URL once it listens.
        let url = format!("http://127.0.0.1:{port}");
        let mut lines = BufReader::new(stdout).lines();
        let mut home = false;
        loop {
            match lines.next() {
                Some(Ok(line)) if home && line.trim() == url => break,
                Some(Ok(line)) => home |= line.trim() == "Home",
                _ => panic!("json-server exited before listening on {url}"),
            }
        }
        // Keep reading its output so that it never blocks on a full pipe;
        // keep what the header log wrote.
        let seen = Seen::default();
        let keep = seen.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(request) = serde_json::from_str::<serde_json::Value>(&line)
                    && request.get("seen").is_some()
                {
                    keep.0.lock().unwrap().push(request);
                    keep.1.notify_all();
                }
            }
        });
        JsonServer { url, seen, _process: process, _dir: dir }
    }

    /// The requests it received (`seen`, and the trace headers), once one
    /// `seen` as `request` (e.g. `GET /books/7`) is among them: waited
    /// for up to 10 s (its log is read on another thread).
    pub fn seen(&self, request: &str) -> Vec<serde_json::Value> {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut seen = self.seen.0.lock().unwrap();
        while !seen.iter().any(|r| r["seen"] == request) {
            let left = until.saturating_duration_since(std::time::Instant::now());
            assert!(!left.is_zero(), "json-server never saw `{request}`: {seen:?}");
            seen = self.seen.1.wait_timeout(seen, left).unwrap().0;
        }
        seen.clone()
    }
}

/// Prism 5.14.2 (`@stoplight/prism-cli`) mocking an OpenAPI document: it
/// answers from the document's examples, checks requests against it and
/// answers 401 when an operation's credential is missing.
pub struct Prism {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    _process: Process,
}

impl Prism {
    /// A document shipped in `@readme/oas-examples`, e.g. `3.0/json/petstore.json`.
    pub fn example(name: &str) -> PathBuf {
        let path = servers_dir().join("node_modules/@readme/oas-examples").join(name);
        assert!(path.exists(), "{} is missing: run `bash .ci/run` (it runs npm ci in tests/servers)", path.display());
        path
    }

    /// Mock `document`.
    pub fn start(document: &Path) -> Prism {
        let bin = servers_dir().join("node_modules/.bin/prism");
        assert!(bin.exists(), "{} is missing: run `bash .ci/run` (it runs npm ci in tests/servers)", bin.display());
        let port = free_port();
        let mut child = Command::new(&bin)
            .arg("mock")
            .arg(document)
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start prism: {e}"));
        // Prism logs to stdout or stderr (it depends on what they are);
        // this line comes once it listens. Both are read to their end, so
        // that it never blocks on a full pipe.
        let (ready, listening) = std::sync::mpsc::channel();
        let outputs: [Box<dyn std::io::Read + Send>; 2] =
            [Box::new(child.stdout.take().unwrap()), Box::new(child.stderr.take().unwrap())];
        for output in outputs {
            let ready = ready.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(output).lines().map_while(Result::ok) {
                    if line.contains("Prism is listening on") {
                        let _ = ready.send(());
                    }
                }
            });
        }
        drop(ready);
        let process = Process(child);
        let url = format!("http://127.0.0.1:{port}");
        if listening.recv().is_err() {
            panic!("prism exited before listening on {url}");
        }
        Prism { url, _process: process }
    }
}

/// `tests/servers/hostile.py` on a free port.
pub struct Hostile {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Its port.
    pub port: u16,
    _process: Process,
}

impl Hostile {
    /// Start one.
    pub fn start() -> Hostile {
        let (port, process) = python("hostile.py", &[]);
        Hostile { url: format!("http://127.0.0.1:{port}"), port, _process: process }
    }
}

/// `tests/servers/oauth.py`: an OAuth2 token endpoint (client credentials).
pub struct TokenEndpoint {
    /// `http://127.0.0.1:PORT/token`.
    pub url: String,
    base: String,
    _process: Process,
}

impl TokenEndpoint {
    /// Give `token` to the client `id` with `secret`.
    pub fn start(id: &str, secret: &str, token: &str) -> TokenEndpoint {
        let (port, process) = python("oauth.py", &[id, secret, token]);
        let base = format!("http://127.0.0.1:{port}");
        TokenEndpoint { url: format!("{base}/token"), base, _process: process }
    }

    /// How many tokens it has given.
    pub fn issued(&self) -> u64 {
        let address = self.base.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        use std::io::{Read, Write};
        write!(stream, "GET /issued HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\n\r\n").unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
        serde_json::from_str::<serde_json::Value>(body).unwrap()["issued"].as_u64().unwrap()
    }
}

/// Start `tests/servers/SCRIPT ARGS...`; its port (its first line) and process.
fn python(script: &str, args: &[&str]) -> (u16, Process) {
    let mut child = Command::new("python3")
        .arg(servers_dir().join(script))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start python3: {e}"));
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let process = Process(child);
    let port = line.trim().parse().unwrap_or_else(|_| panic!("{script} did not print its port: {line:?}"));
    (port, process)
}
