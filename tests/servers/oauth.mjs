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
//
// It exits when stdin closes.
import { createInterface } from "node:readline";
import { createHmac, createPublicKey, generateKeyPairSync, createSign } from "node:crypto";
import { OAuth2Server } from "oauth2-mock-server";

const server = new OAuth2Server();
let key = await server.issuer.keys.generate("RS256");
await server.start(0, "127.0.0.1");
const port = server.address().port;
server.issuer.url = `http://127.0.0.1:${port}`;

let introspection = { active: true };
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
process.exit(0);
