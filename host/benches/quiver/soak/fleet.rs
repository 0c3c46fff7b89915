//! The soak's fleet: three `quiver serve --http` processes sharing one
//! plugins folder (hot reload on), one configuration (the bundled plugins
//! and demo database, an upstream `mcp-server-time`, sessions in Redis),
//! behind nginx; each on a port chosen once, so a replica restarted after
//! a SIGTERM comes back where nginx sends.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use quiver_tests::builds::{publish, versioned};
use quiver_tests::nginx::{Nginx, NginxOptions};
use quiver_tests::redis::RedisServer;

/// One replica.
pub(crate) struct Replica {
    pub(crate) port: u16,
    child: Child,
    /// Its compile cache (kept across a restart).
    cache: Option<tempfile::TempDir>,
    /// Its stderr, kept by a thread (the last lines, for a failure).
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// What a replica holds at one moment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Usage {
    pub(crate) rss_bytes: u64,
    /// Open descriptors other than sockets (files, pipes, event fds): what
    /// a leak would grow. Sockets follow the load.
    pub(crate) fds: usize,
    pub(crate) sockets: usize,
}

impl Replica {
    fn start(dir: &Path, port: u16, cache: tempfile::TempDir) -> Replica {
        let mut child = Command::new(env!("CARGO_BIN_EXE_quiver"))
            .arg("--config")
            .arg(dir.join("quiver.toml"))
            .arg("--plugins")
            .arg(dir.join("plugins"))
            .arg("--cache-dir")
            .arg(cache.path())
            .args(["serve", "--http", &format!("127.0.0.1:{port}")])
            .env_remove("QUIVER_CONFIG")
            .env("RUST_LOG", "warn")
            // As the image runs it (deploy/Containerfile).
            .env("MALLOC_ARENA_MAX", "2")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start quiver serve");
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (lines, keep) = (BufReader::new(child.stderr.take().unwrap()).lines(), log.clone());
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut log = keep.lock().unwrap();
                if log.len() >= 200 {
                    log.remove(0);
                }
                log.push(line);
            }
        });
        let mut replica = Replica { port, child, cache: Some(cache), log };
        replica.wait_ready();
        replica
    }

    /// Poll `/readyz` until it answers 200; a process that ended is a failure.
    fn wait_ready(&mut self) {
        let started = Instant::now();
        loop {
            assert!(self.child.try_wait().unwrap().is_none(), "replica :{} exited: {}", self.port, self.tail());
            assert!(started.elapsed() < Duration::from_secs(120), "replica :{} never got ready", self.port);
            if probe(self.port) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its last log lines.
    pub(crate) fn tail(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Resident memory and open file descriptors, from /proc.
    pub(crate) fn usage(&self) -> Usage {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        let kb = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().split(' ').next()?.parse().ok());
        let links: Vec<std::path::PathBuf> = std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|entries| entries.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok()).collect())
            .unwrap_or_default();
        let sockets = links.iter().filter(|l| l.to_string_lossy().starts_with("socket:")).count();
        Usage { rss_bytes: kb.unwrap_or(0u64) * 1024, fds: links.len() - sockets, sockets }
    }

    /// SIGTERM, and wait for it to drain and exit: its exit status and how long it took.
    fn terminate(&mut self) -> (std::process::ExitStatus, Duration) {
        let started = Instant::now();
        signal("-TERM", self.child.id());
        let status = self.child.wait().unwrap();
        (status, started.elapsed())
    }
}

/// Send `signal` to process `pid` (with kill(1): no unsafe code here).
fn signal(signal: &str, pid: u32) {
    let status = Command::new("kill").args([signal, &pid.to_string()]).status().expect("run kill");
    assert!(status.success(), "kill {signal} {pid} failed");
}

/// Whether `/readyz` on `port` answers 200.
fn probe(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
    let request = format!("GET /readyz HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    let mut answer = String::new();
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_to_string(&mut answer).is_ok()
        && answer.split(' ').nth(1) == Some("200")
}

/// The fleet.
pub(crate) struct Fleet {
    pub(crate) replicas: Vec<Replica>,
    pub(crate) nginx: Nginx,
    _redis: RedisServer,
    dir: tempfile::TempDir,
}

impl Fleet {
    pub(crate) fn start(count: usize) -> Fleet {
        let redis = RedisServer::start();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("plugins")).unwrap();
        publish(&dir.path().join("plugins"), "versioned.wasm", &versioned(0));
        let config =
            format!("[sessions]\nredis = \"{}\"\n{}", redis.url, quiver_tests::mcp_servers::time_section("time"));
        std::fs::write(dir.path().join("quiver.toml"), config).unwrap();
        let ports: Vec<u16> = (0..count)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port())
            .collect();
        let replicas: Vec<Replica> =
            ports.iter().map(|&port| Replica::start(dir.path(), port, tempfile::tempdir().unwrap())).collect();
        let servers: Vec<String> = ports.iter().map(|port| format!("127.0.0.1:{port}")).collect();
        let nginx = Nginx::start_with(&servers, NginxOptions { keepalive: 64 });
        Fleet { replicas, nginx, _redis: redis, dir }
    }

    /// Publish build `generation` of the `versioned` plugin (a hot reload on every replica).
    pub(crate) fn reload(&self, generation: u32) {
        publish(&self.dir.path().join("plugins"), "versioned.wasm", &versioned(generation));
    }

    /// Kill (SIGKILL) the upstream `mcp-server-time` of replica `index`:
    /// its process id, if it was running.
    pub(crate) fn kill_upstream(&self, index: usize) -> Option<u32> {
        let parent = self.replicas[index].pid();
        let victim = children(parent).into_iter().find(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.windows(15).any(|w| w == b"mcp-server-time"))
        })?;
        signal("-KILL", victim);
        Some(victim)
    }

    /// SIGTERM replica `index`, wait for its drain, and start it again on
    /// its port (with its compile cache): how long the drain took.
    pub(crate) fn restart(&mut self, index: usize) -> Duration {
        let mut old = self.replicas.remove(index);
        let (port, tail) = (old.port, old.tail());
        let (status, drained) = old.terminate();
        assert!(status.success(), "replica :{port} ended {status} on SIGTERM: {tail}");
        let cache = old.cache.take().expect("its cache");
        self.replicas.insert(index, Replica::start(self.dir.path(), port, cache));
        drained
    }
}

/// The processes whose parent is `parent`.
fn children(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The fields after the command's closing parenthesis: state, ppid, ...
            stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                == Some(parent)
        })
        .collect()
}

impl Drop for Replica {
    /// A replica still running (a run that failed midway) is stopped.
    fn drop(&mut self) {
        if self.child.try_wait().is_ok_and(|ended| ended.is_none()) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for replica in &mut self.replicas {
            if replica.child.try_wait().is_ok_and(|ended| ended.is_none()) {
                replica.terminate();
            }
        }
    }
}
