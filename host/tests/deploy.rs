//! The Kubernetes manifests and the Containerfile under `deploy/` (issue
//! 36): every manifest valid for the cluster version it is written for
//! (kubernetes-validate, offline and strict) and listed by the
//! kustomization; and what they run is what the binary has: the
//! Deployment's and the image's arguments start a server whose probe paths
//! answer without a token.

mod common;

use std::path::{Path, PathBuf};

use common::Served;
use serde_json::Value;

/// The cluster version the manifests are checked against.
const KUBERNETES: &str = "1.37.0";

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

fn yaml(file: &str) -> Value {
    let text = std::fs::read_to_string(deploy().join(file)).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn the_manifests_validate_and_the_kustomization_lists_each() {
    let mut files: Vec<String> = std::fs::read_dir(deploy())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".yaml") && f != "kustomization.yaml")
        .collect();
    files.sort();
    let kustomization = yaml("kustomization.yaml");
    let mut listed: Vec<String> =
        kustomization["resources"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_owned()).collect();
    listed.sort();
    assert_eq!(listed, files, "kustomization.yaml lists every manifest");

    let validate = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/venv/bin/kubernetes-validate");
    assert!(
        validate.exists(),
        "kubernetes-validate is missing: run `bash .ci/run`, which installs it into target/venv"
    );
    let out = std::process::Command::new(validate)
        .args(["--strict", "--kubernetes-version", KUBERNETES])
        .args(files.iter().map(|f| deploy().join(f)))
        .output()
        .unwrap();
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{report}");
    assert_eq!(report.matches(" passed for resource ").count(), files.len(), "{report}");
}

/// Where the Deployment mounts the Secret's compile-cache key.
const CACHE_KEY: &str = "/etc/quiver-secrets/cache-key";

/// What a pod would mount, made here: the ConfigMap's `quiver.toml` (its
/// key file this test's), the Secret's key, an empty plugins folder and a
/// cache.
struct Pod {
    config: tempfile::TempDir,
    plugins: tempfile::TempDir,
    cache: tempfile::TempDir,
}

impl Pod {
    fn new() -> Pod {
        let config = tempfile::tempdir().unwrap();
        let key = config.path().join("cache-key");
        std::fs::write(&key, format!("{}\n", "0f".repeat(32))).unwrap();
        let toml = yaml("configmap.yaml")["data"]["quiver.toml"].as_str().unwrap().to_owned();
        assert!(toml.contains(CACHE_KEY), "the ConfigMap names the key the Deployment mounts");
        let toml = toml.replace(CACHE_KEY, &key.to_string_lossy());
        std::fs::write(config.path().join("quiver.toml"), toml).unwrap();
        Pod { config, plugins: tempfile::tempdir().unwrap(), cache: tempfile::tempdir().unwrap() }
    }

    /// `args` with the pod's paths made this test's, and the server bound
    /// to a free loopback port instead of every address.
    fn localized(&self, args: &[&str]) -> Vec<String> {
        let local = |path: &Path| path.to_string_lossy().into_owned();
        args.iter()
            .map(|a| match *a {
                "/etc/quiver/quiver.toml" => local(&self.config.path().join("quiver.toml")),
                "/plugins" => local(self.plugins.path()),
                "/cache" => local(self.cache.path()),
                "0.0.0.0:8080" => "127.0.0.1:0".to_owned(),
                other => other.to_owned(),
            })
            .collect()
    }
}

/// Start `args`, check that `paths` answer 200 with no token while the
/// rest needs it, then stop it with SIGTERM: it exits cleanly.
fn serves_its_probes(args: Vec<String>, env: &[(&str, &str)], paths: &[&str]) {
    let served = Served::run(&args, env);
    let addr = served.http_addr();
    let get = |path: &str| {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    };
    for path in paths {
        let answer = get(path);
        assert!(answer.starts_with("HTTP/1.0 200"), "{path}: {answer}");
    }
    assert!(get("/v1/status").starts_with("HTTP/1.0 401"), "everything else needs the token");
    let (success, log) = served.terminate();
    assert!(success, "{log}");
}

#[test]
fn the_deployment_starts_a_server_its_probes_reach() {
    let deployment = yaml("deployment.yaml");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = container["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    let env = container["env"].as_array().unwrap();
    assert!(env.iter().any(|e| e["name"] == "QUIVER_TOKEN" && e["valueFrom"]["secretKeyRef"]["name"] == "quiver"));
    // The plain values are the image's own (the soak runs its replicas with them too).
    let values: Vec<(&str, &str)> =
        env.iter().filter_map(|e| Some((e["name"].as_str()?, e["value"].as_str()?))).collect();
    assert_eq!(values, [("MALLOC_ARENA_MAX", "2")]);
    let pod = &deployment["spec"]["template"]["spec"];
    let secret = pod["volumes"].as_array().unwrap().iter().find(|v| v["secret"]["secretName"] == "quiver").unwrap();
    let mount = container["volumeMounts"].as_array().unwrap().iter().find(|m| m["name"] == secret["name"]).unwrap();
    let file = secret["secret"]["items"][0]["path"].as_str().unwrap();
    assert_eq!(format!("{}/{file}", mount["mountPath"].as_str().unwrap()), CACHE_KEY);
    let probes: Vec<&str> = ["livenessProbe", "readinessProbe"]
        .iter()
        .map(|probe| container[probe]["httpGet"]["path"].as_str().unwrap())
        .collect();
    assert_eq!(container["ports"][0]["containerPort"], 8080);
    let pod = Pod::new();
    let env = [values, vec![("QUIVER_TOKEN", "from-the-secret")]].concat();
    serves_its_probes(pod.localized(&args), &env, &probes);
}

#[test]
fn the_image_runs_as_a_user_and_its_command_serves() {
    let text = std::fs::read_to_string(deploy().join("Containerfile")).unwrap();
    let last = |directive: &str| {
        text.lines().filter_map(|l| l.strip_prefix(directive)).next_back().map(str::trim).unwrap_or_default()
    };
    assert_eq!(text.lines().filter(|l| l.starts_with("FROM ")).count(), 2, "a build stage and a runtime stage");
    assert!(last("USER ").split(':').all(|id| id.parse::<u32>().is_ok_and(|id| id != 0)), "a numeric non-root user");
    let env: Vec<(&str, &str)> = text.lines().filter_map(|l| l.strip_prefix("ENV ")?.trim().split_once('=')).collect();
    assert_eq!(env, [("QUIVER_CACHE_DIR", "/cache"), ("MALLOC_ARENA_MAX", "2")]);
    let entrypoint: Vec<String> = serde_json::from_str(last("ENTRYPOINT ")).unwrap();
    assert_eq!(entrypoint, ["/usr/local/bin/quiver"]);
    let command: Vec<String> = serde_json::from_str(last("CMD ")).unwrap();
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let pod = Pod::new();
    let cache = pod.cache.path().to_string_lossy().into_owned();
    let env = [("QUIVER_TOKEN", "t"), ("QUIVER_CACHE_DIR", cache.as_str()), env[1]];
    serves_its_probes(pod.localized(&command), &env, &["/healthz", "/readyz"]);
}
