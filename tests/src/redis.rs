//! A real Redis: Debian's `redis-server` (installed by `.ci/run`) on a
//! free loopback port, persisting nothing, in a temporary folder; ready
//! when its log says it accepts connections (no sleeps), and stopped by
//! PID when dropped or by [`RedisServer::stop`].

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Where the Debian package puts the server.
const BINARY: &str = "/usr/bin/redis-server";

/// A running Redis.
pub struct RedisServer {
    /// `redis://127.0.0.1:PORT`, as `[sessions] redis` takes it.
    pub url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// Start one.
    pub fn start() -> RedisServer {
        assert!(Path::new(BINARY).exists(), "{BINARY} is missing: run `bash .ci/run` (it installs redis-server)");
        let dir = tempfile::tempdir().expect("a temporary folder");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new(BINARY)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .args(["--daemonize", "no", "--protected-mode", "yes"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start redis-server: {e}"));
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = lines.by_ref().map_while(Result::ok).any(|line| line.contains("Ready to accept connections"));
        std::thread::spawn(move || lines.for_each(drop));
        let server = RedisServer { url: format!("redis://127.0.0.1:{port}"), child, _dir: dir };
        assert!(ready, "redis-server exited before it was ready");
        server
    }

    /// Run one command (`redis-cli`, from the same package): its answer.
    pub fn command(&self, args: &[&str]) -> String {
        let port = self.url.rsplit(':').next().expect("a port");
        let out = Command::new("/usr/bin/redis-cli")
            .args(["-h", "127.0.0.1", "-p", port])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run redis-cli: {e}"));
        assert!(out.status.success(), "redis-cli {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Stop it (by PID).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}
