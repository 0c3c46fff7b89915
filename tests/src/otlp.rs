//! An OTLP/HTTP trace receiver (`tests/servers/otlp_receiver.py`: the
//! OpenTelemetry project's own protobuf classes, PyPI `opentelemetry-proto`,
//! installed by `.ci/run` into `target/venv`) on a free loopback port; ready
//! when it says so (no sleeps), stopped by PID when dropped. Every span it
//! receives is kept as the JSON object the script writes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

fn python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/venv/bin/python");
    assert!(python.exists(), "{} is missing: run `bash .ci/run` (it makes the test venv)", python.display());
    python
}

/// The spans received so far, and a signal for each batch.
type Received = Arc<(Mutex<Vec<Value>>, Condvar)>;

/// A running receiver.
pub struct Receiver {
    /// The base URL an exporter is given (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub endpoint: String,
    received: Received,
    child: Child,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    /// Start one.
    pub fn start() -> Receiver {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("servers/otlp_receiver.py");
        let mut child = Command::new(python())
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the OTLP receiver");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let port = first.strip_prefix("listening ").unwrap_or_else(|| panic!("the receiver did not start: {first:?}"));
        let endpoint = format!("http://127.0.0.1:{port}");
        let received: Received = Arc::default();
        let keep = received.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let span: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a span ({e}): {line}"));
                keep.0.lock().unwrap().push(span);
                keep.1.notify_all();
            }
        });
        Receiver { endpoint, received, child }
    }

    /// The spans received once `done` holds of them, waiting up to `limit`
    /// (the exporter sends in batches, every few seconds at most); the
    /// spans so far, in a panic, if it never does.
    pub fn wait_for(&self, limit: Duration, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let until = Instant::now() + limit;
        let mut spans = self.received.0.lock().unwrap();
        while !done(&spans) {
            let left = until.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "not received in {limit:?}; received: {:#}", Value::Array(spans.clone()));
            spans = self.received.1.wait_timeout(spans, left).unwrap().0;
        }
        spans.clone()
    }
}

/// The span named `name` among `spans`.
pub fn named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no span `{name}` in {spans:#?}"))
}
