//! A throwaway PostgreSQL server for the database tests and benchmarks.
//!
//! The Debian package's binaries (`/usr/lib/postgresql/*/bin`) run a
//! cluster in a temporary folder, listening on a free loopback port only,
//! with password (SCRAM) authentication. PostgreSQL refuses to run as
//! root, so as root every server command runs as the `postgres` system
//! user (`runuser`), and the folder is handed to it. `pg_ctl -w` returns
//! once the server accepts connections: no sleeping. The server is stopped
//! by the PID in its `postmaster.pid` when the value is dropped.
//!
//! A missing PostgreSQL panics with how to install it: tests that need it
//! fail, they are never skipped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The superuser's password in every throwaway cluster.
pub const PASSWORD: &str = "quiver-test-password";

/// A running throwaway cluster.
pub struct Postgres {
    bin: PathBuf,
    root: tempfile::TempDir,
    port: u16,
    /// The unprivileged user the server runs as, when the tests run as root.
    run_as: Option<String>,
    /// Server options besides the address and port (TLS).
    options: String,
}

impl Postgres {
    /// Create a cluster and start it on a free loopback port.
    pub fn start() -> Postgres {
        Postgres::start_with(|_| String::new())
    }

    /// Create a cluster that also accepts TLS, with a certificate for
    /// `127.0.0.1` and `localhost` from a CA of its own (made here with
    /// rcgen), and start it. Returns the server and the CA's PEM file.
    pub fn start_with_tls() -> (Postgres, PathBuf) {
        let mut ca_file = PathBuf::new();
        let server = Postgres::start_with(|root| {
            let (ca, certificate, key) = certificates();
            ca_file = root.join("ca.crt");
            std::fs::write(&ca_file, ca).expect("write the CA");
            std::fs::write(root.join("server.crt"), certificate).expect("write the certificate");
            std::fs::write(root.join("server.key"), key).expect("write the key");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(root.join("server.key"), std::fs::Permissions::from_mode(0o600))
                .expect("make the key private");
            format!(
                "-c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                root.join("server.crt").display(),
                root.join("server.key").display()
            )
        });
        (server, ca_file)
    }

    /// Create a cluster; `prepare` writes what its extra server options
    /// (which it returns) need into the cluster's folder, before the
    /// folder is handed to the server's user.
    fn start_with(prepare: impl FnOnce(&Path) -> String) -> Postgres {
        let bin = binaries();
        let root = tempfile::Builder::new().prefix("quiver-pg-").tempdir().expect("a temporary folder");
        let run_as = is_root().then(|| "postgres".to_owned());
        std::fs::create_dir(root.path().join("socket")).expect("create the socket folder");
        let password_file = root.path().join("password");
        std::fs::write(&password_file, PASSWORD).expect("write the password file");
        let options = prepare(root.path());
        if let Some(user) = &run_as {
            hand_over(root.path(), user);
        }
        let server = Postgres { bin, root, port: free_port(), run_as, options };
        server.run_tool(
            "initdb",
            &[
                "-D",
                &server.data().display().to_string(),
                "-U",
                "postgres",
                "-A",
                "scram-sha-256",
                "--pwfile",
                &password_file.display().to_string(),
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ],
        );
        server.start_again();
        server
    }

    /// Start the server again after [`Postgres::stop`], on the same port.
    pub fn start_again(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c synchronous_commit=off -c full_page_writes=off {}",
            self.port,
            self.root.path().join("socket").display(),
            self.options
        );
        let log = self.root.path().join("server.log").display().to_string();
        self.run_tool(
            "pg_ctl",
            &["-D", &self.data().display().to_string(), "-l", &log, "-w", "-t", "60", "-o", &options, "start"],
        );
    }

    /// Stop the server now (immediate shutdown, by its PID), as a crash or
    /// a lost network would end its connections.
    pub fn stop(&self) {
        let Some(pid) = self.pid() else { return };
        let stopped = self
            .command("pg_ctl", &["-D", &self.data().display().to_string(), "-m", "immediate", "-w", "-t", "30", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !stopped {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
    }

    /// The postmaster's PID, while it runs.
    pub fn pid(&self) -> Option<u32> {
        let text = std::fs::read_to_string(self.data().join("postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection URL for `user` to `database` (no password in it).
    pub fn url(&self, user: &str, database: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/{database}", self.port)
    }

    /// A file holding the superuser's password, readable by this process.
    pub fn password_file(&self) -> PathBuf {
        self.root.path().join("password")
    }

    /// Create `database` and run `sql` in it (a script: many statements).
    pub fn create(&self, database: &str, sql: &str) {
        self.psql("postgres", &format!("CREATE DATABASE {database}"));
        self.script(database, sql);
    }

    /// Run a script of statements in `database` as the superuser.
    pub fn script(&self, database: &str, sql: &str) {
        let mut child = self
            .client(database)
            .args(["-q", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run psql");
        child.stdin.take().unwrap().write_all(sql.as_bytes()).expect("send the script to psql");
        let output = child.wait_with_output().expect("wait for psql");
        assert!(output.status.success(), "psql failed: {}", String::from_utf8_lossy(&output.stderr));
    }

    /// The result of one statement in `database`, as psql prints it
    /// unaligned without headers (`|` between columns, one row per line).
    pub fn psql(&self, database: &str, sql: &str) -> String {
        let output = self.client(database).args(["-tA", "-c", sql]).output().expect("run psql");
        assert!(output.status.success(), "psql `{sql}` failed: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("utf-8 from psql").trim().to_owned()
    }

    fn client(&self, database: &str) -> Command {
        let mut command = Command::new(self.bin.join("psql"));
        command
            .args(["-X", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "postgres"])
            .args(["-d", database])
            .env("PGPASSWORD", PASSWORD)
            .env("PGCONNECT_TIMEOUT", "10");
        command
    }

    fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    fn command(&self, tool: &str, args: &[&str]) -> Command {
        let program = self.bin.join(tool);
        let mut command = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(program);
                c
            }
            None => Command::new(program),
        };
        command.args(args).current_dir(self.root.path());
        command
    }

    fn run_tool(&self, tool: &str, args: &[&str]) {
        let output = self.command(tool, args).output().unwrap_or_else(|e| panic!("run {tool}: {e}"));
        if !output.status.success() {
            let log = std::fs::read_to_string(self.root.path().join("server.log")).unwrap_or_default();
            panic!(
                "{tool} failed: {}{}\nserver log:\n{log}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The folder of the newest installed PostgreSQL's binaries.
fn binaries() -> PathBuf {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("pg_ctl").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).unwrap_or_else(|| {
        panic!(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/pg_ctl); the database tests need it: \
             `apt-get install postgresql` (or run `bash .ci/run`, which installs it)"
        )
    })
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Give `dir` (and what is in it) to `user`, found in `/etc/passwd`.
fn hand_over(dir: &Path, user: &str) {
    let passwd = std::fs::read_to_string("/etc/passwd").expect("read /etc/passwd");
    let (uid, gid) = passwd
        .lines()
        .map(|line| line.split(':').collect::<Vec<_>>())
        .find(|fields| fields.first() == Some(&user) && fields.len() > 3)
        .map(|fields| (fields[2].parse().unwrap(), fields[3].parse().unwrap()))
        .unwrap_or_else(|| panic!("no `{user}` user to run PostgreSQL as (the postgresql package creates it)"));
    for entry in std::fs::read_dir(dir).expect("list the cluster's folder").flatten() {
        std::os::unix::fs::chown(entry.path(), Some(uid), Some(gid)).expect("hand the folder to the server's user");
    }
    std::os::unix::fs::chown(dir, Some(uid), Some(gid)).expect("hand the folder to the server's user");
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.local_addr().expect("a local address").port()
}

/// A CA, and a server certificate and key it signed for `127.0.0.1` and
/// `localhost`, as PEM.
fn certificates() -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("a CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "Quiver test CA");
    let ca_certificate = ca.self_signed(&ca_key).expect("the CA certificate");
    let key = KeyPair::generate().expect("a server key");
    let mut server = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).expect("parameters");
    server.distinguished_name.push(DnType::CommonName, "127.0.0.1");
    let certificate = server.signed_by(&key, &Issuer::new(ca, ca_key)).expect("the server certificate");
    (ca_certificate.pem(), certificate.pem(), key.serialize_pem())
}
