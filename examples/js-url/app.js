// A Quiver plugin in JavaScript: parse, build and resolve URLs with the
// web platform's URL and URLSearchParams. Build and package it with
// examples/js-url/build.sh (see docs/src/plugin-authors/writing-a-plugin.md, "Plugins in JavaScript").

import { Tools, ToolError, z } from "../../sdk/js/quiver_plugin.js";

const tools = new Tools("url", "0.1.0", "Parse, build and resolve URLs (WHATWG URL rules).", ["web"]);

function parsed(text, base) {
  try {
    return base === undefined ? new URL(text) : new URL(text, base);
  } catch {
    throw ToolError.invalidInput(`\`${text}\` is not a valid URL${base === undefined ? "" : ` relative to \`${base}\``}`);
  }
}

tools.action(
  "parse",
  {
    description: "Split a URL into scheme, host, port, path, query parameters and fragment.",
    input: z.object({ url: z.string().describe("An absolute URL, e.g. https://example.com:8080/a/b?x=1#top") }).strict(),
  },
  ({ url }) => {
    const u = parsed(url);
    return {
      scheme: u.protocol.replace(/:$/, ""),
      host: u.hostname,
      port: u.port === "" ? null : Number(u.port),
      path: u.pathname,
      query: Object.fromEntries([...u.searchParams.keys()].map((k) => [k, u.searchParams.getAll(k)])),
      fragment: u.hash.replace(/^#/, "") || null,
      origin: u.origin,
    };
  },
);

tools.action(
  "build",
  {
    description: "Build a URL from a base and query parameters, percent-encoding them correctly.",
    input: z
      .object({
        base: z.string().describe("The URL to start from, e.g. https://api.example.com/search"),
        query: z
          .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
          .default({})
          .describe("Parameters to add (values become text)."),
        fragment: z.string().optional().describe("A fragment to set, without the #."),
      })
      .strict(),
  },
  ({ base, query, fragment }) => {
    const u = parsed(base);
    for (const [key, value] of Object.entries(query)) u.searchParams.append(key, String(value));
    if (fragment !== undefined) u.hash = fragment;
    return { url: u.href };
  },
);

tools.action(
  "resolve",
  {
    description: "Resolve a relative reference (../a, /b, ?q, //host) against a base URL, as a browser does.",
    input: z
      .object({
        reference: z.string().describe("The relative or absolute reference."),
        base: z.string().describe("The absolute URL it is relative to."),
      })
      .strict(),
  },
  ({ reference, base }) => {
    parsed(base);
    return { url: parsed(reference, base).href };
  },
);

tools.action(
  "decode",
  {
    description: "Percent-decode a URL component (%20 to a space, %C3%A9 to é); a `+` stays a `+`.",
    input: z.object({ text: z.string().describe("The encoded text, e.g. caf%C3%A9%20au%20lait") }).strict(),
  },
  // A malformed sequence (`%E0%A4%A`) throws URIError: the model reads its message.
  ({ text }) => ({ text: decodeURIComponent(text) }),
);

export const plugin = tools.plugin;
