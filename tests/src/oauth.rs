//! A real authorization server on loopback: oauth2-mock-server 8.2.3
//! (npm, installed by `.ci/run` into `tests/servers/node_modules`), driven
//! by `tests/servers/oauth.mjs`. It signs tokens with its own RS256 keys
//! and publishes them at its JWKS; the script also makes the tokens a
//! hostile client would (`alg: none`, HS256 keyed with the public key, a
//! key never published). Ready when it prints its issuer (no sleeps);
//! stopped by PID when dropped.

use std::io::{BufRead, BufReader, Lines, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

use serde_json::{Value, json};

/// The authorization server.
pub struct Issuer {
    /// `http://127.0.0.1:PORT`, the `iss` of its tokens.
    pub url: String,
    /// The key it signs with first.
    pub kid: String,
    io: Mutex<(ChildStdin, Lines<BufReader<ChildStdout>>)>,
    child: Child,
}

impl Issuer {
    /// Start it on a free port.
    pub fn start() -> Issuer {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("servers");
        let package = dir.join("node_modules/oauth2-mock-server/package.json");
        assert!(
            package.exists(),
            "{} is missing: run `bash .ci/run` (it runs npm ci in tests/servers)",
            package.display()
        );
        let mut child = Command::new("node")
            .arg(dir.join("oauth.mjs"))
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the authorization server (node): {e}"));
        let stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().and_then(Result::ok).expect("the authorization server exited before listening");
        let ready: Value = serde_json::from_str(&first).unwrap();
        Issuer {
            url: ready["issuer"].as_str().unwrap().to_owned(),
            kid: ready["kid"].as_str().unwrap().to_owned(),
            io: Mutex::new((stdin, lines)),
            child,
        }
    }

    /// Send one command; its answer.
    pub fn ask(&self, command: Value) -> Value {
        let mut io = self.io.lock().unwrap();
        writeln!(io.0, "{command}").unwrap();
        io.0.flush().unwrap();
        let line = io.1.next().and_then(Result::ok).expect("the authorization server stopped answering");
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert!(answer.get("error").is_none(), "{command}: {answer}");
        answer
    }

    /// A token it signs, for `aud`, `sub` with `scope` (and `more` of the
    /// command: `expiresIn`, `kid`, `claims`, `scp`).
    pub fn token(&self, aud: &str, sub: &str, scope: &str, more: Value) -> String {
        let mut command = json!({ "op": "token", "aud": aud, "sub": sub, "scope": scope });
        if let Value::Object(more) = more {
            command.as_object_mut().unwrap().extend(more);
        }
        self.ask(command)["token"].as_str().unwrap().to_owned()
    }

    /// A hostile token of `op` (`none`, `hs256`, `stranger`) with these claims.
    pub fn forged(&self, op: &str, aud: &str, sub: &str, scope: &str) -> String {
        self.ask(json!({ "op": op, "aud": aud, "sub": sub, "scope": scope }))["token"].as_str().unwrap().to_owned()
    }

    /// A new signing key: its kid.
    pub fn rotate(&self) -> String {
        self.ask(json!({ "op": "rotate" }))["kid"].as_str().unwrap().to_owned()
    }

    /// What `/introspect` answers from now on.
    pub fn introspection(&self, answer: Value) {
        self.ask(json!({ "op": "introspect", "answer": answer }));
    }

    /// What the person at `/authorize` agrees to from now on: `consent`
    /// is `{"sub", "scope"?, "deny"?}` (see `oauth.mjs`).
    pub fn consent(&self, consent: Value) {
        let mut command = json!({ "op": "consent" });
        if let Value::Object(consent) = consent {
            command.as_object_mut().unwrap().extend(consent);
        }
        self.ask(command);
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
