// The call playground's arguments form, built from a tool's JSON Schema.

import { asText, el } from "/ui/assets/dom.js";

export class InputError extends Error {}
let fieldSeq = 0;

/** The form-able kind of a schema, or "json" for what only a JSON textarea can express. */
export function kindOf(s) {
  if (!s || typeof s !== "object" || s.oneOf || s.anyOf || s.allOf || s.$ref || s.not) return "json";
  if (Array.isArray(s.enum) && s.enum.length) return "enum";
  let type = s.type;
  if (Array.isArray(type)) {
    const real = type.filter((t) => t !== "null");
    type = real.length === 1 ? real[0] : null;
  }
  if (type === "object" || (!type && s.properties)) return s.properties && Object.keys(s.properties).length ? "object" : "json";
  if (type === "array") return s.items && typeof s.items === "object" && !Array.isArray(s.items) ? "array" : "json";
  return ["string", "integer", "number", "boolean"].includes(type) ? type : "json";
}

/** Show (or clear, with no message) a field's inline error; throw when there is one. */
export function fieldError(input, error, message) {
  error.textContent = message ?? "";
  error.hidden = !message;
  if (message) {
    input.setAttribute("aria-invalid", "true");
    throw new InputError(message, { cause: input });
  }
  input.removeAttribute("aria-invalid");
}

/**
 * One input (or fieldset) for a schema. Returns { node, read }; read() gives the value,
 * undefined to leave the field out, or throws InputError after showing it inline.
 */
export function schemaField(schema, name, path, required, item = false) {
  const s = schema && typeof schema === "object" ? schema : {};
  const kind = kindOf(s);
  const id = `call-f${++fieldSeq}`;
  const hint = s.description ? el("span", { class: "hint", id: `${id}-hint` }, s.description) : null;
  const mark = required && !item ? el("span", { class: "req" }, " (required)") : null;
  const error = el("span", { class: "field-error", id: `${id}-error`, hidden: true });
  const common = { id, name: path, "aria-describedby": [hint && `${id}-hint`, `${id}-error`].filter(Boolean).join(" ") };
  if (required) common["aria-required"] = "true";
  const wrap = (input, labelText = name) =>
    el("div", { class: "field" }, el("label", { for: id }, labelText, mark), hint, input, error);

  if (kind === "object") {
    const children = Object.entries(s.properties).map(([key, sub]) =>
      [key, schemaField(sub, key, path ? `${path}.${key}` : key, (s.required ?? []).includes(key))]);
    const node = el("fieldset", null, el("legend", null, name, mark), hint, children.map(([, f]) => f.node));
    const read = () => {
      const value = {};
      for (const [key, f] of children) {
        const v = f.read();
        if (v !== undefined) value[key] = v;
      }
      return !required && Object.keys(value).length === 0 ? undefined : value;
    };
    return { node, read };
  }

  if (kind === "array") {
    const list = el("ol", { class: "items" });
    const items = [];
    const add = () => {
      const n = items.length ? Number(items.at(-1).n) + 1 : 1;
      const field = schemaField(s.items, `${name} item ${n}`, `${path}.${n - 1}`, true, true);
      const item = { n, field };
      const li = el("li", null, field.node, el("button", {
        type: "button", class: "secondary", "aria-label": `Remove ${name} item ${n}`,
        onclick: () => { items.splice(items.indexOf(item), 1); li.remove(); },
      }, "Remove"));
      items.push(item);
      list.append(li);
    };
    for (let i = 0; i < Math.min(s.minItems ?? 0, 10); i += 1) add();
    const node = el("fieldset", null, el("legend", null, name, mark), hint, list,
      el("button", { type: "button", class: "secondary", onclick: add }, `Add ${name} item`));
    const read = () => {
      const value = items.map((i) => i.field.read()).filter((v) => v !== undefined);
      return !required && value.length === 0 ? undefined : value;
    };
    return { node, read };
  }

  if (kind === "boolean") {
    const byDefault = s.default === true;
    const input = el("input", { ...common, type: "checkbox", checked: byDefault });
    const node = el("div", { class: "field check" }, input, el("label", { for: id }, name, mark), hint, error);
    return { node, read: () => (required || input.checked !== byDefault ? input.checked : undefined) };
  }

  if (kind === "enum") {
    const input = el("select", common,
      el("option", { value: "" }, required ? "Choose…" : "(not set)"),
      s.enum.map((v, i) => el("option", { value: String(i) }, asText(v))));
    const at = s.enum.findIndex((v) => JSON.stringify(v) === JSON.stringify(s.default));
    if (at >= 0) input.value = String(at);
    return { node: wrap(input), read: () => (input.value === "" ? undefined : s.enum[Number(input.value)]) };
  }

  if (kind === "integer" || kind === "number") {
    const input = el("input", { ...common, type: "number", step: kind === "integer" ? "1" : "any", min: s.minimum, max: s.maximum,
      placeholder: s.default !== undefined ? `default: ${s.default}` : null });
    const read = () => {
      fieldError(input, error);
      if (input.value.trim() === "") {
        if (input.validity.badInput) fieldError(input, error, "Not a number.");
        return undefined;
      }
      const n = Number(input.value);
      if (!Number.isFinite(n)) fieldError(input, error, "Not a number.");
      if (kind === "integer" && !Number.isInteger(n)) fieldError(input, error, "Must be a whole number.");
      return n;
    };
    return { node: wrap(input), read };
  }

  if (kind === "string") {
    const long = (s.maxLength ?? Infinity) > 200 &&
      (/^(sql|query|code|script|text|body|content|markdown|source|template|statement|prompt)$/i.test(name) || s.format === "textarea");
    const attrs = { ...common, placeholder: s.default !== undefined ? `default: ${s.default}` : null };
    const input = long ? el("textarea", { ...attrs, rows: 5 }) : el("input", { ...attrs, type: "text" });
    return { node: wrap(input), read: () => (input.value === "" && !required ? undefined : input.value) };
  }

  // Anything else: a JSON textarea.
  const input = el("textarea", { ...common, rows: 4, class: "json", placeholder: "JSON" });
  const read = () => {
    fieldError(input, error);
    if (input.value.trim() === "") return undefined;
    try {
      return JSON.parse(input.value);
    } catch (e) {
      return fieldError(input, error, `Not valid JSON: ${e.message}`);
    }
  };
  return { node: wrap(input, `${name} (JSON)`), read };
}
