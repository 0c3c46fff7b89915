//! A real Prometheus (the Debian package `prometheus`, installed by
//! `.ci/run`) scraping one target every second, on a free loopback port, in
//! a temporary folder; ready when it says so on its log (no sleeps), and
//! stopped by PID when dropped. Queried through its HTTP API.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Where the Debian package puts the server.
const BINARY: &str = "/usr/bin/prometheus";

/// A Prometheus server scraping one target.
pub struct Prometheus {
    /// Where its HTTP API listens.
    pub addr: SocketAddr,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Scrape `http://target/metrics` every second.
    pub fn scraping(target: SocketAddr) -> Prometheus {
        assert!(Path::new(BINARY).exists(), "{BINARY} is missing: run `bash .ci/run` (it installs prometheus)");
        let dir = tempfile::tempdir().expect("a temporary folder");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: quiver\n    \
                 scrape_interval: 1s\n    scrape_timeout: 1s\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .expect("write the configuration");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut child = Command::new(BINARY)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start prometheus: {e}"));
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let ready = lines.by_ref().map_while(Result::ok).any(|line| line.contains("Server is ready to receive"));
        // Keep reading its log so that it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let prometheus = Prometheus { addr, child, _dir: dir };
        assert!(ready, "prometheus exited before it was ready");
        prometheus
    }

    /// The value of an instant PromQL `query` with one result, if it has
    /// one yet.
    pub fn value(&self, query: &str) -> Option<f64> {
        let path = format!("/api/v1/query?query={}", encode(query));
        let answer: Value = serde_json::from_str(&get(self.addr, &path)).expect("a JSON answer");
        assert_eq!(answer["status"], "success", "`{query}`: {answer}");
        let results = answer["data"]["result"].as_array()?;
        let [result] = results.as_slice() else { return None };
        result["value"][1].as_str().and_then(|v| v.parse().ok())
    }

    /// Poll `query` (every 200 ms, for at most `limit`) until its value
    /// passes `done`; the last value seen, if it never does.
    pub fn wait_for(&self, query: &str, limit: Duration, done: impl Fn(f64) -> bool) -> Result<f64, Option<f64>> {
        let start = Instant::now();
        let mut last = None;
        while start.elapsed() < limit {
            last = self.value(query);
            if let Some(value) = last.filter(|v| done(*v)) {
                return Ok(value);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(last)
    }
}

/// Percent-encode a query parameter.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The body of `GET path` from `addr` (HTTP/1.0: the server closes).
pub fn get(addr: SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP answer: {answer}"));
    assert!(head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"), "GET {path}: {head}");
    body.to_owned()
}
