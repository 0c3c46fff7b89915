#!/usr/bin/env python3
"""Write the fuzz targets' seed corpora (fuzz/corpus/<target>/seed-*) from the
repository's own inputs: the configuration snippets of the README, of the book
(docs/src/**/*.md) and of the tests, the test skills, the bundled plugins'
stub and manifest sections, and the SQL the policy's tests send.
Deterministic; run it from the repository root after `cargo build` (it reads
the bundled components the build wrote). Entries the fuzzer finds are added
beside the seeds by `fuzz/run.sh` (minimised).

`--dry-run` writes nothing: it prints how many seeds each target would get
and how many of them the committed corpus lacks."""

import glob, hashlib, json, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


DRY_RUN = "--dry-run" in sys.argv[1:]
PLANNED = {}  # target -> seed file names (--dry-run)


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = os.path.join(CORPUS, target)
    name = "seed-" + hashlib.sha256(data).hexdigest()[:16]
    if DRY_RUN:
        PLANNED.setdefault(target, set()).add(name)
        return
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def leb(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def custom_sections(wasm):
    """(name, payload) of the custom sections at the component's top level
    and in its core modules (one level deep is enough for bundled plugins)."""
    found = []

    def walk(data, start):
        i = start
        while i < len(data):
            sid = data[i]
            i += 1
            size = 0
            shift = 0
            while True:
                b = data[i]
                i += 1
                size |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
            body = data[i:i + size]
            if sid == 0:
                n, j, shift = 0, 0, 0
                while True:
                    b = body[j]
                    j += 1
                    n |= (b & 0x7F) << shift
                    shift += 7
                    if not b & 0x80:
                        break
                found.append((body[j:j + n].decode("utf-8", "replace"), body[j + n:]))
            elif sid == 1 and body[:4] == b"\0asm":
                walk(body, 8)
            i += size

    walk(wasm, 8)
    return found


def component_with(section_name, payload):
    name = section_name.encode()
    body = leb(len(name)) + name + payload
    return b"\0asm\x0d\x00\x01\x00" + b"\x00" + leb(len(body)) + body


def documents():
    """README.md and every chapter of the book, in a stable order."""
    chapters = glob.glob(os.path.join(ROOT, "docs", "src", "**", "*.md"), recursive=True)
    return ["README.md"] + sorted(os.path.relpath(path, ROOT) for path in chapters)


def configs():
    blocks = []
    for document in documents():
        blocks += re.findall(r"```toml\n(.*?)```", read(document), re.S)
    docs = [line[4:] if line.startswith("//! ") else "" for line in read("host/src/config.rs").splitlines() if line.startswith("//!")]
    blocks += re.findall(r"```toml\n(.*?)```", "\n".join(docs), re.S)
    for block in blocks:
        write("config", block)
    write("config", '[agents.reader]\naccess = { "*" = "read" }\ncategories = ["builtin"]\n[disclosure]\nselection_threshold = 3\n')


def skills():
    for path in glob.glob(os.path.join(ROOT, "tests/data/*skills/*/SKILL.md")):
        with open(path, "rb") as f:
            write("skill", f.read())
    write("skill", "---\nname: fuzz-skill\ndescription: >\n  Folded\n  text.\n---\n# Body\n")


def sections():
    components = sorted(glob.glob(os.path.join(ROOT, "target/debug/build/quiver-bundled-*/out/*.wasm")))
    if not components:
        sys.exit("no bundled components under target/debug/build: run `cargo build` first")
    seen = set()
    for path in components:
        base = os.path.basename(path)
        if base in seen:
            continue
        seen.add(base)
        with open(path, "rb") as f:
            wasm = f.read()
        for name, payload in custom_sections(wasm):
            if name == "quiver:stub":
                write("stub", b"\x01" + payload)
                write("stub", b"\x00" + component_with(name, payload))
            elif name == "quiver:manifest":
                write("manifest", payload)


def plain():
    # A component no SDK built (the plain-rust fixture, wit-bindgen), alone
    # and with its `.wit` beside it; and JSON for each kind of WIT type.
    components = sorted(glob.glob(os.path.join(ROOT, "target/debug/build/quiver-tests-*/out/plain-rust.wasm")))
    if not components:
        sys.exit("no plain-rust fixture under target/debug/build: run `cargo test --no-run` first")
    with open(components[0], "rb") as f:
        wasm = f.read()
    wit = read("tests/components/wit/plain.wit").encode()
    write("plain_types", b"\x00" + wasm)
    write("plain_types", b"\x01" + len(wit).to_bytes(2, "little") + wit + wasm)
    values = [
        "true", "255", "256", "-1", "18446744073709551615", "-9223372036854775808", "3.0", "1e39", "1.5",
        '"x"', '"ab"', '""', "null", "[1, 2]", '["a", "b"]', '[18446744073709551615, "s", false]',
        '{"ok": "fine"}', '{"err": "y-z"}', '{"ok": null}', '"two"', '{"tag": "circle", "value": 2}',
        '{"tag": "rect", "value": [1, 2]}', '{"tag": "point"}', '["a", "c", "a"]',
        '{"n": 1, "shape": {"tag": "point"}, "set": [], "inner": {"deep": {"some": 3}}}',
        '{"n": 1, "maybe": null, "shape": {"tag": "point"}, "set": ["b"], "inner": {}}',
        '{"some": null}', '{"some": {"some": 1}}',
    ]
    for pick in range(25):
        for value in values:
            write("plain_values", bytes([pick]) + value.encode())


def policies():
    # Policy files beside a component (Wassette's format), the ones the
    # tests write among them, and the shapes the reader refuses.
    write("policy", "version: \"1.0\"\ndescription: notes\npermissions:\n  storage:\n    allow:\n"
          "      - uri: \"fs:///data/**\"\n        access: [\"read\", \"write\"]\n    deny:\n"
          "      - uri: \"fs:///etc/**\"\n  network:\n    allow:\n      - host: \"api.github.com\"\n"
          "      - host: \"*.example.com\"\n      - cidr: \"10.0.0.0/8\"\n  environment:\n    allow:\n"
          "      - key: \"API_KEY\"\n  runtime:\n    docker: {}\n")
    write("policy", "permissions:\n  storage:\n    allow:\n      - uri: fs://workspace/**\n"
          "      - uri: \"fs:///bidi/\\u202Eevil\"\n  environment:\n    allow:\n      - { key: OK, extra: 1 }\n")
    write("policy", "a: &x [1]\nb: *x\n")
    write("policy", "---\na: 1\n---\nb: 2\n")
    write("policy", "permissions: {storage: {allow: [{uri: 'fs:///a', access: [read]}]}, network: {allow: 5}}\n")


def sql():
    sources = read("host/src/sandbox/sql/policy/tests.rs") + read("tests/all/databases/mod.rs") + read("tests/all/databases/escapes.rs")
    statements = set()
    for literal in re.findall(r'"((?:SELECT|WITH|VALUES|EXPLAIN|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|TRUNCATE|ATTACH|PRAGMA|COPY|SET|BEGIN|DO|GRANT|TABLE|MERGE|LISTEN|PREPARE|RESET|VACUUM|DETACH)(?:[^"\\]|\\.)*)"', sources):
        unescaped = re.sub(r'\\(["\\n])', lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), literal)
        statements.add(re.sub(r"\\\n\s*", "", unescaped))
    # Trees the parser builds without recursing, as deep as the size
    # limit allows, and compounds at and past their bound.
    limit = 64 * 1024
    statements.add("SELECT 1" + " + 1" * ((limit - 8) // 4))
    statements.add("SELECT 1" + " UNION ALL SELECT 1" * ((limit - 8) // 19))
    statements.add("SELECT 1" + " UNION SELECT 1" * 63)
    statements.add("SELECT 1" + " EXCEPT SELECT 1" * 64)
    for statement in sorted(statements):
        for level in (0, 1, 2):
            write("sql", bytes([level]) + statement.encode())


MESSAGES = [
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}',
    '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
    '{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"search_tools","arguments":{"query":"add two numbers"}}}',
    '{"jsonrpc":"2.0","id":4,"method":"ping"}',
    '{"jsonrpc":"2.0","id":5,"method":"resources/list","params":{"cursor":"x"}}',
    '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}',
    '{"jsonrpc":"2.0","id":1,"result":{}}',
    '{"jsonrpc":"2.0","id":1e999999,"method":"ping"}',
    '[1,2,3]',
    '{"jsonrpc":"1.0","id":6,"method":"ping"}',
    '{bad',
]


def messages():
    for message in MESSAGES:
        write("envelope", message)
    write("stdio", "\n".join(MESSAGES[:5]) + "\n")
    write("stdio", "\n".join(MESSAGES) + "\n")
    write("stdio", MESSAGES[0] + "\n" + MESSAGES[1] + "\n" + "[" * 300 + "\n" + MESSAGES[4] + "\n")


def mcp_tools():
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/data/mcp/*.json")) + glob.glob(os.path.join(ROOT, "tests/data/corpus/mcp-tools/*.json")))[:12]:
        with open(path, "rb") as f:
            write("mcp_tools", f.read())
    write("mcp_tools", '{"tools":[{"name":"a\\u001b[2J","inputSchema":{"type":"object"}},{"name":"ok","description":"x\\r\\n## System","inputSchema":{"type":"object","properties":{"q\\u0007":{}}}}]}')


def token_counts():
    # Texts that reach the prompt: real tool descriptions, prose in other
    # scripts, contractions, digits, whitespace and punctuation runs.
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/data/corpus/mcp-tools/*.json")))[:6]:
        with open(path, "rb") as f:
            write("token_count", f.read()[:4096])
    for text in [
        "Evaluate an arithmetic expression.",
        "naïve café — 東京 😀 \u0000\r\n\t  tail   ",
        "it's we'll THEY'RE don't\n\n\n",
        "12345678901234567890 3.14159 0x7fffffff",
        " " * 2000 + "x",
        "'" * 3000,
        "a" + "\u0300" * 500,
        "مرحبا بالعالم Привет мир नमस्ते दुनिया",
    ]:
        write("token_count", text)


def openapi():
    # The real documents the tests serve (@readme/oas-examples, JSON), small enough to mutate.
    examples = sorted(glob.glob(os.path.join(ROOT, "tests/servers/node_modules/@readme/oas-examples/3.*/json/*.json")))
    for path in examples:
        if os.path.getsize(path) <= 64 * 1024:
            with open(path, "rb") as f:
                write("openapi", f.read())
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/data/openapi/*"))):
        if os.path.isfile(path) and os.path.getsize(path) <= 64 * 1024:
            with open(path, "rb") as f:
                write("openapi", f.read())


def trace_context():
    # traceparent, tracestate and baggage, one per line: the W3C examples,
    # the forms the trace test sends, and values at and past the limits.
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    for seed in [
        parent,
        parent + "\ncongo=t61rcWkgMzE,rojo=00f067aa0ba902b7\nuser=alice,session=42;prop=1",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00\n\nk=%20v",
        "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra\nvendor=x",
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        parent + "\n" + ",".join(f"v{i}=x" for i in range(40)) + "\n" + ",".join(f"k{i}=v" for i in range(70)),
        parent + "\nvendor=x\n" + "k=" + "v" * 9000,
        parent + "\nvendor=\u001b[2J\nuser=%0D%0Aforged",
    ]:
        write("trace_context", seed)


def guard():
    # Requests to the HTTP guard: a method, a path, then headers; {token},
    # {cookie} and {csrf} stand for the server's token and a live sign-in's.
    for seed in [
        "GET\n/v1/status\nhost: localhost\nauthorization: Bearer {token}",
        "GET\n/v1/status\nhost: localhost\nauthorization: bearer  {token}x",
        "GET\n/v1/status\nhost: localhost\ncookie: {cookie}",
        "GET\n/ui/\nhost: localhost",
        "GET\n/ui/api/me\nhost: localhost\ncookie: a=1; {cookie}; b=2",
        "POST\n/v1/tools/x/call\nhost: localhost\ncookie: {cookie}",
        "POST\n/v1/tools/x/call\nhost: localhost\ncookie: {cookie}\nx-csrf-token: {csrf}",
        "POST\n/ui/sign-out\nhost: localhost\ncookie: {cookie}\nx-csrf-token: {csrf}x",
        "POST\n/mcp\nhost: localhost\ncookie: {cookie}\nx-csrf-token: {csrf}",
        "GET\n/metrics\nhost: localhost\ncookie: {cookie}",
        "GET\n/ui/assets/app.js\nhost: localhost",
        "POST\n/ui/sign-in\nhost: localhost",
        "GET\n/ui/api/calls/live\nhost: evil.example\ncookie: {cookie}",
        "DELETE\n/ui/api/me\nhost: localhost\ncookie: quiver_session=" + "0" * 64,
        "PUT\n//v1/status\nhost: localhost\ncookie: {cookie}",
    ]:
        write("guard", seed)


def b64url(data):
    import base64
    if isinstance(data, str):
        data = data.encode()
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def access_tokens():
    # Tokens signed with the fuzzer's fixed P-256 key (RFC 6979
    # deterministic ECDSA, so the seeds are the same on every run), then
    # hostile variants, each followed by scope lines.
    import json
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    with open(os.path.join(ROOT, "host", "src", "fuzzing", "access_token_key.der"), "rb") as f:
        key = serialization.load_der_private_key(f.read(), password=None)

    def sign(header, claims):
        signed = b64url(json.dumps(header, separators=(",", ":"))) + "." + b64url(json.dumps(claims, separators=(",", ":")))
        der = key.sign(signed.encode(), ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
        r, s = decode_dss_signature(der)
        return signed + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

    issuer, audience = "https://issuer.fuzz", "https://quiver.fuzz/mcp"
    good = {"iss": issuer, "aud": audience, "sub": "agent-1", "exp": 4102444800, "scope": "quiver:chinook:read"}
    header = {"alg": "ES256", "typ": "JWT", "kid": "fuzz"}
    for token in [
        sign(header, good),
        sign(header, dict(good, aud=[audience, "other"], scp=["quiver:*:write", "quiver:tool:calc__evaluate"])),
        sign(header, dict(good, aud="https://elsewhere/mcp")),
        sign(header, dict(good, exp=1000)),
        sign(header, dict(good, nbf=4102444800)),
        sign(header, dict(good, iss="https://evil")),
        sign(dict(header, kid="other"), good),
        sign({"alg": "ES256"}, dict(good, sub="")),
        b64url('{"alg":"none","kid":"fuzz"}') + "." + b64url(json.dumps(good)) + ".",
        b64url('{"alg":"HS256","kid":"fuzz"}') + "." + b64url(json.dumps(good)) + ".c2ln",
        "opaque-token",
        "a.b.c",
    ]:
        write("access_token", token + "\nquiver:chinook:read\nquiver:*:admin\nquiver:tool:x\nopenid\nquiver:a b:read")


def jwks():
    # Key sets as issuers publish them: the fuzzer's own, an RSA key,
    # symmetric and encrypting keys (never used), and keys of unknown types.
    rsa = {"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig", "e": "AQAB",
           "n": b64url(bytes(range(1, 256)) + bytes(range(1, 2)))}
    from cryptography.hazmat.primitives import serialization
    with open(os.path.join(ROOT, "host", "src", "fuzzing", "access_token_key.der"), "rb") as f:
        public = serialization.load_der_private_key(f.read(), password=None).public_key().public_numbers()
    own = {"kty": "EC", "crv": "P-256", "kid": "fuzz", "alg": "ES256", "use": "sig",
           "x": b64url(public.x.to_bytes(32, "big")), "y": b64url(public.y.to_bytes(32, "big"))}
    for document in [
        {"keys": [own, rsa]},
        {"keys": [rsa]},
        {"keys": [dict(rsa, alg="ES256")]},
        {"keys": [{"kty": "oct", "kid": "s", "k": "c2VjcmV0"}, dict(rsa, use="enc")]},
        {"keys": [{"kty": "EC", "crv": "P-521", "kid": "e", "x": "AA", "y": "AA"}]},
        {"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "0", "x": b64url(bytes(32))}]},
        {"keys": [{"kty": "nope"}, {}, 5, None]},
        {"keys": {}},
    ]:
        import json
        write("jwks", json.dumps(document))


def sign_ins():
    # A status byte, the token endpoint's answer, a Cookie header, a redirect path.
    answers = [
        '{"access_token":"eyJ.a.b","token_type":"Bearer","expires_in":3600,"scope":"quiver:calc:read"}',
        '{"access_token":"opaque","token_type":"bearer"}',
        '{"error":"invalid_grant","error_description":"code used"}',
        '{"error":"made_up","error_description":"\\u001b[31mred\\nline"}',
        '{"access_token":"","token_type":"Bearer"}',
        '{"access_token":"a","token_type":"mac"}',
        '<html>bad gateway</html>',
    ]
    cookies = [
        "quiver_sign_in_state=" + "A" * 43,
        "other=1; quiver_sign_in_state=abc-_DEF" + "x" * 35 + "; quiver_session=" + "0" * 64,
        "quiver_sign_in_state=",
    ]
    paths = ["/ui/sign-in/callback", "/auth/callback", "/ui/../v1", "//x", "/a/./b", "/cb?x=1"]
    for status, body in enumerate(answers):
        for i, cookie in enumerate(cookies):
            write("sign_in", bytes([status]) + (body + "\n" + cookie + "\n" + paths[(status + i) % len(paths)]).encode())


def oci():
    """Artifact manifests as wkg, oci-wasm and older tools lay them out, with
    the refused shapes beside them; Wasm configs; lock files and docker
    config.json files."""
    zeros, ones = "sha256:" + "0" * 64, "sha256:" + "1" * 64
    def manifest(config_type, layers, media_type="application/vnd.oci.image.manifest.v1+json", extra=None):
        document = {"schemaVersion": 2, "mediaType": media_type,
                    "config": {"mediaType": config_type, "digest": zeros, "size": 2},
                    "layers": [{"mediaType": t, "digest": d, "size": n} for t, d, n in layers]}
        document.update(extra or {})
        return json.dumps(document)
    wasm_config = "application/vnd.wasm.config.v0+json"
    write("oci_manifest", manifest(wasm_config, [("application/wasm", ones, 10)], extra={"artifactType": wasm_config}))
    write("oci_manifest", manifest("application/vnd.oci.empty.v1+json",
        [("application/vnd.bytecodealliance.wasm.component.layer.v0+wasm", ones, 10),
         ("application/vnd.wasm.policy.v1+yaml", zeros, 5)]))
    write("oci_manifest", manifest("application/vnd.oci.image.config.v1+json", [("application/vnd.wasm.component.v1", ones, 10)]))
    write("oci_manifest", manifest(wasm_config, [("application/vnd.oci.image.layer.v1.tar+gzip", ones, 10)]))
    write("oci_manifest", manifest(wasm_config, [("application/wasm", ones, 10), ("application/wasm", zeros, 10)]))
    write("oci_manifest", manifest(wasm_config, [("application/wasm", "md5:00", 10)]))
    write("oci_manifest", manifest(wasm_config, [("application/wasm", ones, 1 << 40)]))
    write("oci_manifest", json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []}))
    write("oci_manifest", json.dumps({"created": "2026-11-29T00:00:00Z", "architecture": "wasm", "os": "wasip2",
        "layerDigests": [ones], "component": {"exports": ["wasi:cli/run@0.2.0"], "imports": [], "target": None}}))
    sig = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
           "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": zeros, "size": 2},
           "layers": [{"mediaType": "application/vnd.dev.cosign.simplesigning.v1+json", "digest": ones, "size": 250,
                       "annotations": {"dev.cosignproject.cosign/signature": "MEUCIQD" + "A" * 88}}]}
    write("oci_signature", json.dumps(sig))
    sig["layers"][0]["annotations"] = {}
    write("oci_signature", json.dumps(sig))
    write("oci_signature", json.dumps({"critical": {"identity": {"docker-reference": "r/x"},
        "image": {"docker-manifest-digest": ones}, "type": "cosign container image signature"}, "optional": None}))
    write("oci_signature", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEVs/o5+uQbTjL3chynL4wXgUg2R9q9UU8I5mEovUf86QZ7kOBIjJwqnzD1omageEHWwHdBO6B+dFabmdT9POxg==\n-----END PUBLIC KEY-----\n")
    write("oci_signature", "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n")
    oci_bundles()
    write("oci_credentials", '# Written by `quiver oci resolve`\n[pins]\n"127.0.0.1:5000/tools/calc:1.0" = "' + ones + '"\n')
    write("oci_credentials", '[pins]\n"r/x:1" = "latest"\n\0{"auths": {}}')
    write("oci_credentials", '[pins]\n\0{"auths": {"https://127.0.0.1:5000/v1/": {"auth": "Y2k6czNjcmV0"}}}')
    write("oci_credentials", '\0{"auths": {"127.0.0.1:5000": {"username": "ci", "password": "x"}}, "credsStore": "desktop"}')
    write("oci_credentials", '\0{"auths": {"127.0.0.1:5000": {"auth": "bm8tY29sb24="}}}')


def oci_bundles():
    """Sigstore bundles as `cosign sign --key` writes them (a DSSE envelope
    around cosign's signing statement), a message signature, a keyless one,
    earlier versions, and the referrer manifest that holds one."""
    import base64
    b64 = lambda data: base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode()
    # The manifest the target checks against, and its digest.
    manifest = b'{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}'
    hex_digest = hashlib.sha256(manifest).hexdigest()
    bundle_type = "application/vnd.dev.sigstore.bundle.v0.3+json"
    sig = "MEUCIQD" + "A" * 88
    def statement(predicate, digest=hex_digest, kind="https://in-toto.io/Statement/v1"):
        return json.dumps({"_type": kind, "subject": [{"digest": {"sha256": digest}}],
                           "predicateType": predicate, "predicate": {}})
    def dsse(payload, media_type=bundle_type, material=None, payload_type="application/vnd.in-toto+json"):
        return json.dumps({"mediaType": media_type,
                           "verificationMaterial": material or {"publicKey": {"hint": "aGludA=="}, "tlogEntries": []},
                           "dsseEnvelope": {"payload": b64(payload), "payloadType": payload_type,
                                            "signatures": [{"sig": sig, "keyid": ""}]}})
    sign = "https://sigstore.dev/cosign/sign/v1"
    write("oci_bundle", dsse(statement(sign)))
    write("oci_bundle", dsse(statement("https://slsa.dev/provenance/v1")))
    write("oci_bundle", dsse(statement(sign, "0" * 64)))
    write("oci_bundle", dsse(statement(sign, kind="https://in-toto.io/Statement/v0.1"),
                             media_type="application/vnd.dev.sigstore.bundle+json;version=0.2"))
    write("oci_bundle", dsse(statement(sign), material={"certificate": {"rawBytes": b64("cert")}}))
    write("oci_bundle", dsse("not json", payload_type="text/plain"))
    write("oci_bundle", json.dumps({"mediaType": bundle_type, "verificationMaterial": {"publicKey": {"hint": ""}},
        "messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": b64(bytes.fromhex(hex_digest))},
                             "signature": sig}}))
    write("oci_bundle", json.dumps({"mediaType": bundle_type, "messageSignature": {"signature": "%%%"},
                                    "dsseEnvelope": {"payload": "", "payloadType": "", "signatures": []}}))
    empty = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    write("oci_bundle", json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": bundle_type,
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": empty, "size": 2},
        "layers": [{"mediaType": bundle_type, "digest": "sha256:" + "1" * 64, "size": 4971}],
        "subject": {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + hex_digest,
                    "size": len(manifest)},
        "annotations": {"dev.sigstore.bundle.content": "dsse-envelope",
                        "dev.sigstore.bundle.predicateType": sign}}))
    write("oci_bundle", json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + "2" * 64,
                       "size": 779, "artifactType": bundle_type}]}))


if __name__ == "__main__":
    usage = __doc__ + "\nusage: python3 fuzz/seeds.py [--dry-run]"
    if any(arg in ("-h", "--help") for arg in sys.argv[1:]):
        print(usage)
        sys.exit(0)
    if any(arg != "--dry-run" for arg in sys.argv[1:]):
        sys.exit(usage)
    openapi()
    messages()
    mcp_tools()
    configs()
    skills()
    sections()
    plain()
    policies()
    sql()
    trace_context()
    guard()
    access_tokens()
    jwks()
    sign_ins()
    oci()
    token_counts()
    if DRY_RUN:
        for target, names in sorted(PLANNED.items()):
            folder = os.path.join(CORPUS, target)
            present = set(os.listdir(folder)) if os.path.isdir(folder) else set()
            print(target, len(names), "seeds,", len(names - present), "not in fuzz/corpus/" + target)
        sys.exit(0)
    for target in sorted(os.listdir(CORPUS)):
        print(target, len(os.listdir(os.path.join(CORPUS, target))))
