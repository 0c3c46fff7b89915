// Write a Quiver plugin in JavaScript as ordinary functions whose inputs
// are zod schemas. Bundle it with esbuild, build it into a WebAssembly
// component with componentize-js against Quiver's `wit/`, then write its
// stub with `quiver package` (see docs/src/plugin-authors/writing-a-plugin.md, "Plugins in JavaScript").
//
//   import { Tools, ToolError, z } from "./quiver_plugin.js";
//   const tools = new Tools("url", "0.1.0", "Parse and build URLs.", ["web"]);
//   tools.action("parse", {
//     description: "Split a URL into its parts.",
//     input: z.object({ url: z.string().describe("An absolute URL.") }),
//   }, ({ url }) => { ... });
//   export const plugin = tools.plugin;
//
// Each action's input schema is its zod schema's JSON Schema (zod's own
// `z.toJSONSchema`): an author writes no JSON Schema. Inputs are parsed by
// the same zod schema (defaults applied) before the function runs.
// Throwing `ToolError.invalidInput(...)` (and `notFound`, `denied`,
// `unavailable`, `failed`) gives the model a typed error; any other
// exception becomes a `failed` error with its name and message.

import { z } from "zod";

export { z };

/** A failure the model can act on, with its kind. */
export class ToolError extends Error {
  constructor(tag, message) {
    super(message);
    this.tag = tag;
  }
  static invalidInput(message) { return new ToolError("invalid-input", String(message)); }
  static notFound(message) { return new ToolError("not-found", String(message)); }
  static denied(message) { return new ToolError("denied", String(message)); }
  static unavailable(message) { return new ToolError("unavailable", String(message)); }
  static failed(message) { return new ToolError("failed", String(message)); }
}

/** A plugin's actions: `tools.action(name, { description, input, access }, run)`. */
export class Tools {
  constructor(name, version, description, categories = [], kind = "tool") {
    this.manifest = { name, version, kind, description, categories, actions: [] };
    this.actions = new Map();
    const tools = this;
    /** The `quiver:plugin/plugin` interface componentize-js exports. */
    this.plugin = {
      describe() {
        return tools.manifest;
      },
      invoke(action, input) {
        return tools.invoke(action, input);
      },
    };
  }

  action(name, { description, input, access = "read" }, run) {
    if (!description) throw new Error(`action \`${name}\` has no description: its first line is what models see`);
    const inputSchema = z.toJSONSchema(input, { io: "input" });
    delete inputSchema.$schema;
    // A model sends an action's arguments as one JSON object: say so at
    // build time, in the words the Rust SDK uses.
    if (inputSchema.type !== "object") {
      throw new Error(
        `action \`${name}\`: an action's input is a JSON object of named arguments, not ${inputSchema.type ?? "this schema"}: ` +
          "take a z.object({ ... }) of named fields",
      );
    }
    this.actions.set(name, { input, run });
    this.manifest.actions.push({
      name,
      description,
      inputSchema: JSON.stringify(inputSchema),
      outputSchema: undefined,
      access,
    });
    return this;
  }

  invoke(action, input) {
    const found = this.actions.get(action);
    if (!found) throw { tag: "not-found", val: `no action \`${action}\`` };
    let output;
    try {
      const parsed = found.input.safeParse(JSON.parse(input));
      if (!parsed.success) throw ToolError.invalidInput(z.prettifyError(parsed.error));
      output = found.run(parsed.data);
    } catch (error) {
      if (error instanceof ToolError) throw { tag: error.tag, val: error.message };
      const name = error && error.name ? error.name : "Error";
      const message = error && error.message !== undefined ? error.message : String(error);
      throw { tag: "failed", val: `${name}: ${message}` };
    }
    return JSON.stringify(output);
  }
}
