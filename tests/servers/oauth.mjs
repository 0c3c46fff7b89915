// A real authorization server for the OAuth tests: oauth2-mock-server
// (npm) on 127.0.0.1, on a free port. Once it listens it prints one JSON
// line, {"issuer", "kid"}; then it answers one JSON line per command read
// on stdin:
//
//   {"op":"token", "aud", "sub", "scope"?, "scp"?, "expiresIn"?, "kid"?, "claims"?}
//       a token the server signs (its own code: SignJWT with its key)
//   {"op":"rotate"}            a new signing key; its kid (the JWKS lists both)
//   {"op":"none", ...claims}   the same claims with `alg: none` and no signature
//   {"op":"hs256", ...claims}  HS256 signed with the RSA public key (PEM) as the secret
//   {"op":"stranger", ...}     RS256 signed with a key the server never published
//   {"op":"introspect", "answer"}  what /introspect answers from now on
//   {"op":"consent", "sub", "scope"?, "deny"?, "aud"?, "form"?}
//       what the person at /authorize agrees to from now on: the access
//       token the code is traded for names `sub`, carries `scope` (default:
//       the scopes the client asked for), the client as `client_id`, and
//       the `resource` the client named as its `aud` (RFC 8707); with
//       `deny` the person refuses (error=access_denied, `deny` its
//       description; `aud` overrides the audience; with `form` the person
//       first submits a sign-in form on the issuer's site, so the way
//       back starts there, as with a real server). The server's own /authorize and /token run the flow
//       and check PKCE; these hooks play the person and the policy a real
//       server would apply.
//
// It exits when stdin closes.
import { createServer } from "node:http";
import { createInterface } from "node:readline";
import { createHmac, createPublicKey, generateKeyPairSync, createSign } from "node:crypto";
import { OAuth2Server } from "oauth2-mock-server";

const server = new OAuth2Server();
let key = await server.issuer.keys.generate("RS256");
await server.start(0, "127.0.0.1");
const port = server.address().port;
server.issuer.url = `http://127.0.0.1:${port}`;

let introspection = { active: true };

// The person's sign-in form, on the issuer's site: its submission sends
// the browser on to `next` (the client's redirect URI, with the code).
const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const form = createServer((req, res) => {
  const url = new URL(req.url, "http://127.0.0.1");
  if (req.method === "GET" && url.pathname === "/consent") {
    const next = url.searchParams.get("next") ?? "";
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Sign in · issuer</title></head>
<body><main><h1>Sign in to the issuer</h1><form method="post" action="/consent">
<input type="hidden" name="next" value="${escapeHtml(next)}"><button id="consent" type="submit">Allow</button>
</form></main></body></html>`);
    return;
  }
  if (req.method === "POST" && url.pathname === "/consent") {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      res.writeHead(302, { location: new URLSearchParams(body).get("next") ?? "/" });
      res.end();
    });
    return;
  }
  res.writeHead(404);
  res.end();
});
await new Promise((resolve) => form.listen(0, "127.0.0.1", resolve));
const formUrl = `http://127.0.0.1:${form.address().port}/consent`;

let consent = { sub: "johndoe" };
const granted = new Map(); // code → what the person agreed to
server.service.on("beforeAuthorizeRedirect", (redirect, req) => {
  const code = redirect.url.searchParams.get("code");
  if (code === null) return;
  if (consent.deny !== undefined) {
    redirect.url.searchParams.delete("code");
    redirect.url.searchParams.set("error", "access_denied");
    redirect.url.searchParams.set("error_description", consent.deny);
    return;
  }
  if (consent.form) {
    // The server redirects with this very URL object: change it in place.
    const to = new URL(formUrl);
    to.searchParams.set("next", redirect.url.href);
    redirect.url.href = to.href;
  }
  granted.set(code, {
    sub: consent.sub,
    scope: consent.scope ?? req.query.scope ?? "",
    client_id: req.query.client_id,
    resource: consent.aud ?? req.query.resource,
  });
});
server.service.on("beforeTokenSigning", (token, req) => {
  const body = req.body ?? {};
  const grant = body.grant_type === "authorization_code" ? granted.get(body.code) : undefined;
  // The ID token (built second, without a scope) keeps the server's claims.
  if (grant === undefined || !("scope" in token.payload)) return;
  Object.assign(token.payload, { sub: grant.sub, scope: grant.scope, client_id: grant.client_id });
  if (grant.resource !== undefined) token.payload.aud = grant.resource;
});
server.service.on("beforeIntrospect", (response) => {
  response.body = introspection;
});

const b64 = (value) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");

function payload(command) {
  const now = Math.floor(Date.now() / 1000);
  const claims = { iss: server.issuer.url, iat: now, nbf: now - 10, exp: now + (command.expiresIn ?? 3600) };
  if (command.aud !== undefined) claims.aud = command.aud;
  if (command.sub !== undefined) claims.sub = command.sub;
  if (command.scope !== undefined) claims.scope = command.scope;
  if (command.scp !== undefined) claims.scp = command.scp;
  return { ...claims, ...(command.claims ?? {}) };
}

async function answer(command) {
  switch (command.op) {
    case "token":
      return {
        token: await server.issuer.buildToken({
          kid: command.kid ?? key.kid,
          expiresIn: command.expiresIn,
          scopesOrTransform: (_header, claims) => {
            const { iss, iat, nbf, exp, ...rest } = payload(command);
            Object.assign(claims, rest);
            if (command.expiresIn !== undefined) claims.exp = exp;
          },
        }),
      };
    case "rotate":
      key = await server.issuer.keys.generate("RS256");
      return { kid: key.kid };
    case "none":
      return { token: `${b64({ alg: "none", typ: "JWT", kid: key.kid })}.${b64(payload(command))}.` };
    case "hs256": {
      const { d, p, q, dp, dq, qi, ...publicJwk } = key;
      const pem = createPublicKey({ key: publicJwk, format: "jwk" }).export({ type: "spki", format: "pem" });
      const signed = `${b64({ alg: "HS256", typ: "JWT", kid: key.kid })}.${b64(payload(command))}`;
      return { token: `${signed}.${createHmac("sha256", pem).update(signed).digest("base64url")}` };
    }
    case "stranger": {
      const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
      const signed = `${b64({ alg: "RS256", typ: "JWT", kid: command.kid ?? "stranger" })}.${b64(payload(command))}`;
      const signature = createSign("RSA-SHA256").update(signed).sign(privateKey).toString("base64url");
      return { token: `${signed}.${signature}` };
    }
    case "introspect":
      introspection = command.answer;
      return { ok: true };
    case "consent":
      consent = { sub: command.sub ?? "johndoe", scope: command.scope, deny: command.deny, aud: command.aud, form: command.form };
      return { ok: true };
    default:
      return { error: `unknown op ${command.op}` };
  }
}

console.log(JSON.stringify({ issuer: server.issuer.url, kid: key.kid }));
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  try {
    console.log(JSON.stringify(await answer(JSON.parse(line))));
  } catch (error) {
    console.log(JSON.stringify({ error: String(error) }));
  }
}
await server.stop();
form.close();
process.exit(0);
