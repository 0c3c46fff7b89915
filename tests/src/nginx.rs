//! A real load balancer: Debian's nginx (installed by `.ci/run`), in a
//! folder of its own, on a free loopback port, in the foreground as one
//! process (no daemon, no workers under another user), round robin over
//! the given servers; ready once it accepts (no sleeps), stopped by PID
//! when dropped.

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A running nginx.
pub struct Nginx {
    /// `127.0.0.1:PORT`, where it listens.
    pub addr: String,
    /// Its process id.
    pub pid: u32,
    child: Child,
    dir: tempfile::TempDir,
}

/// How nginx runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct NginxOptions {
    /// Idle connections to the servers kept open for reuse (`keepalive`);
    /// none (a connection per request) when 0.
    pub keepalive: usize,
}

impl Nginx {
    /// nginx in front of `servers` (`HOST:PORT` each), a connection per request.
    pub fn start(servers: &[String]) -> Nginx {
        Nginx::start_with(servers, NginxOptions::default())
    }

    /// nginx in front of `servers`, as `options` say.
    pub fn start_with(servers: &[String], options: NginxOptions) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let d = dir.path().display();
        let mut upstream: String = servers.iter().map(|u| format!("    server {u};\n")).collect();
        if options.keepalive > 0 {
            // Shorter than the servers' own idle timeout (60 s): nginx,
            // not the server, closes an idle connection, so it never
            // sends a request on one the server is closing.
            upstream.push_str(&format!("    keepalive {};\n    keepalive_timeout 30s;\n", options.keepalive));
        }
        let conf = format!(
            "error_log {d}/error.log;\npid {d}/nginx.pid;\nworker_rlimit_nofile 16384;\n\
             events {{ worker_connections 8192; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  \
             fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  \
             keepalive_requests 100000;\n  \
             upstream quiver {{\n{upstream}  }}\n  \
             server {{\n    listen 127.0.0.1:{port} backlog=4096;\n    location / {{\n      proxy_pass http://quiver;\n      \
             proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n      proxy_set_header Host $host;\n      \
             proxy_read_timeout 120s;\n      proxy_buffering off;\n    }}\n  }}\n}}\n"
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].into_iter().find(|p| Path::new(p).exists());
        let nginx = nginx.expect("nginx is missing: run `bash .ci/run`, which installs Debian's nginx");
        let child = Command::new(nginx)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .args(["-g", "daemon off; master_process off;"])
            .spawn()
            .expect("start nginx");
        let (addr, pid) = (format!("127.0.0.1:{port}"), child.id());
        let mut nginx = Nginx { addr, pid, child, dir };
        // Ready once it accepts; a process that ended is a failure.
        let started = Instant::now();
        while std::net::TcpStream::connect(&nginx.addr).is_err() {
            assert!(nginx.child.try_wait().unwrap().is_none(), "nginx exited: {}", nginx.log());
            assert!(started.elapsed() < Duration::from_secs(30), "nginx never listened");
            std::thread::sleep(Duration::from_millis(10));
        }
        nginx
    }

    /// Its error log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
