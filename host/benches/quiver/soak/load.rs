//! The soak's clients: each one an MCP client of one revision, calling a
//! mix of tools through the load balancer until the deadline, with a
//! pause between calls. Every call is accounted for: answered, answered
//! "retry" (HTTP 503 with `Retry-After`, a refused connection, or a tool
//! the host could not start because every instance slot stayed busy) and
//! sent again until answered, or failed (anything else, kept with its
//! reason).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Attempts of one call before it counts as failed.
const ATTEMPTS: usize = 30;
/// Reasons of failed calls kept for the report.
const KEPT: usize = 20;

/// The tools called, in turn: (name, arguments, a text the answer holds).
pub(crate) const MIX: &[(&str, &str, &str)] = &[
    ("calc__evaluate", r#"{"expression": "6*7"}"#, "42"),
    ("chinook__query", r#"{"sql": "SELECT name FROM artist WHERE artist_id = 1"}"#, "AC/DC"),
    // An upstream server's tool is reached through the `mcp` meta-tool, as a model reaches it.
    (
        "mcp",
        r#"{"subcommand": "call", "server": "time", "tool": "get_current_time", "parameters": {"timezone": "UTC"}}"#,
        "UTC",
    ),
    ("versioned__build", "{}", "gen-"),
];

/// The protocol revision a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Revision {
    /// 2026-07-28: every request stands alone.
    Stateless,
    /// 2025-11-25: `initialize` opens a session, every request names it.
    Session,
}

/// What the clients did.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) answered: [AtomicU64; 2],
    /// "Retry" answers (each followed by another attempt).
    pub(crate) retries: AtomicU64,
    /// Calls answered after at least one retry.
    pub(crate) retried: AtomicU64,
    /// Of the "retry" answers, the host's own "busy" (no instance slot
    /// within the call's time limit), told apart in the report.
    pub(crate) busy: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) sessions: AtomicU64,
    pub(crate) reasons: Mutex<Vec<String>>,
    /// Failed calls by kind (the reason's first words).
    pub(crate) kinds: Mutex<std::collections::BTreeMap<String, u64>>,
    pub(crate) latencies: Mutex<Vec<Duration>>,
}

impl Tally {
    fn fail(&self, reason: String) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let kind: String = reason.split_whitespace().skip(1).take(4).collect::<Vec<_>>().join(" ");
        *self.kinds.lock().unwrap().entry(kind).or_default() += 1;
        let mut reasons = self.reasons.lock().unwrap();
        if reasons.len() < KEPT {
            reasons.push(reason);
        }
    }
}

/// How one attempt ended.
enum Attempt {
    Answered(String),
    Retry(Duration),
    /// The host's own "retry": a tool it was too busy to start.
    Busy(Duration),
    Failed(String),
}

/// One client.
pub(crate) struct Client {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
    pub(crate) revision: Revision,
    pub(crate) index: usize,
    pub(crate) pause: Duration,
    /// The tools it calls, in turn.
    pub(crate) mix: &'static [(&'static str, &'static str, &'static str)],
}

impl Client {
    /// Call until `deadline`, counting into `tally`.
    pub(crate) async fn run(self, deadline: Instant, tally: &Tally) {
        let mut seed = (self.index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut session = None;
        let mut n = self.index;
        // Clients start spread over one pause, not all at once.
        tokio::time::sleep(self.pause.mul_f64(next(&mut seed))).await;
        while Instant::now() < deadline {
            if self.revision == Revision::Session && session.is_none() {
                match self.open(tally).await {
                    Some(id) => session = Some(id),
                    None => return,
                }
            }
            let (tool, arguments, expected) = self.mix[n % self.mix.len()];
            n += 1;
            let started = Instant::now();
            let mut retried = false;
            let mut outcome = None;
            for _ in 0..ATTEMPTS {
                let attempt = self.call(session.as_deref(), n, tool, arguments).await;
                match attempt {
                    Attempt::Answered(text) if text.contains(expected) => outcome = Some(Ok(())),
                    Attempt::Answered(text) => outcome = Some(Err(format!("{tool}: {}", cut(&text)))),
                    Attempt::Failed(reason) => outcome = Some(Err(format!("{tool}: {reason}"))),
                    Attempt::Retry(wait) | Attempt::Busy(wait) => {
                        if matches!(attempt, Attempt::Busy(_)) {
                            tally.busy.fetch_add(1, Ordering::Relaxed);
                        }
                        tally.retries.fetch_add(1, Ordering::Relaxed);
                        retried = true;
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                }
                break;
            }
            match outcome.unwrap_or_else(|| Err(format!("{tool}: still \"retry\" after {ATTEMPTS} attempts"))) {
                Ok(()) => {
                    let index = usize::from(self.revision == Revision::Session);
                    tally.answered[index].fetch_add(1, Ordering::Relaxed);
                    tally.retried.fetch_add(u64::from(retried), Ordering::Relaxed);
                    tally.latencies.lock().unwrap().push(started.elapsed());
                }
                Err(reason) => tally.fail(reason),
            }
            tokio::time::sleep(self.pause.mul_f64(2.0 * next(&mut seed))).await;
        }
        if let Some(id) = session {
            let _ = self.http.delete(format!("{}/mcp", self.base)).header("mcp-session-id", id).send().await;
        }
    }

    /// `initialize` and `notifications/initialized`: the session's id.
    async fn open(&self, tally: &Tally) -> Option<String> {
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": format!("soak-{}", self.index), "version": "0"}}});
        for _ in 0..ATTEMPTS {
            let sent = self.post(None).body(initialize.to_string()).send().await;
            let response = match sent {
                Err(error) if error.is_connect() => {
                    tally.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                Err(error) => {
                    tally.fail(format!("initialize: {error}"));
                    return None;
                }
                Ok(response) => response,
            };
            if let Some(wait) = retry_after(&response) {
                tally.retries.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(wait).await;
                continue;
            }
            let id = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
            let (status, body) = (response.status(), response.text().await.unwrap_or_default());
            let Some(id) = id.filter(|_| status.is_success()) else {
                tally.fail(format!("initialize: {status} {}", cut(&body)));
                return None;
            };
            let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
            for _ in 0..ATTEMPTS {
                match self.post(Some(&id)).body(initialized).send().await {
                    Ok(response) if response.status().as_u16() == 202 => {
                        tally.sessions.fetch_add(1, Ordering::Relaxed);
                        return Some(id);
                    }
                    Ok(response) if retry_after(&response).is_some() => {}
                    Err(error) if error.is_connect() => {}
                    Ok(response) => {
                        let status = response.status();
                        tally
                            .fail(format!("initialized: {status} {}", cut(&response.text().await.unwrap_or_default())));
                        return None;
                    }
                    Err(error) => {
                        tally.fail(format!("initialized: {error}"));
                        return None;
                    }
                }
                tally.retries.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            tally.fail("initialized: still \"retry\"".into());
            return None;
        }
        tally.fail("initialize: still \"retry\"".into());
        None
    }

    fn post(&self, session: Option<&str>) -> reqwest::RequestBuilder {
        let request = self
            .http
            .post(format!("{}/mcp", self.base))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        match session {
            Some(id) => request.header("mcp-session-id", id).header("mcp-protocol-version", "2025-11-25"),
            None => request,
        }
    }

    /// One attempt of `tools/call`.
    async fn call(&self, session: Option<&str>, id: usize, tool: &str, arguments: &str) -> Attempt {
        let arguments: Value = serde_json::from_str(arguments).expect("arguments are JSON");
        let mut params = json!({"name": tool, "arguments": arguments});
        let mut request = self.post(session);
        if session.is_none() {
            params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": format!("soak-{}", self.index), "version": "0"}});
            request = request
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", tool);
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let response = match request.body(body.to_string()).send().await {
            Ok(response) => response,
            Err(error) if error.is_connect() => return Attempt::Retry(Duration::from_millis(200)),
            Err(error) => return Attempt::Failed(format!("{error:?}")),
        };
        if let Some(wait) = retry_after(&response) {
            return Attempt::Retry(wait);
        }
        let status = response.status();
        let text = match response.text().await {
            Ok(text) => text,
            Err(error) => return Attempt::Failed(format!("{status}, the body broke off: {error}")),
        };
        if !status.is_success() {
            return Attempt::Failed(format!("{status} {}", cut(&text)));
        }
        // One JSON body, or the `data:` of the event that answers.
        let data = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find(|d| d.contains("\"result\"") || d.contains("\"error\""));
        let reply: Value = match serde_json::from_str(data.unwrap_or(&text).trim()) {
            Ok(reply) => reply,
            Err(_) => return Attempt::Failed(format!("not JSON-RPC: {}", cut(&text))),
        };
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default();
        // The host's own "retry": every instance slot busy past the call's
        // time limit (load shed, not a call lost).
        if reply["result"]["isError"] == true && text.contains("could not start: the host is busy") {
            return Attempt::Busy(Duration::from_secs(1));
        }
        if reply["result"]["isError"] == true || reply.get("error").is_some() {
            return Attempt::Failed(cut(&reply.to_string()));
        }
        Attempt::Answered(text.to_owned())
    }
}

/// The wait a "retry" answer asks for (HTTP 503 with `Retry-After`).
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    if response.status().as_u16() != 503 {
        return None;
    }
    let seconds = response.headers().get("retry-after")?.to_str().ok()?.parse::<u64>().ok()?;
    Some(Duration::from_secs(seconds.min(5)))
}

fn cut(text: &str) -> String {
    text.chars().take(300).collect()
}

/// A pseudo-random number in [0, 1) (xorshift; the soak needs spread, not secrecy).
fn next(seed: &mut u64) -> f64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    (*seed >> 11) as f64 / (1u64 << 53) as f64
}
