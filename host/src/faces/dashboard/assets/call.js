// The call playground: pick a tool, fill in its arguments, call it and show the answer.

import { el, pretty, replace } from "/ui/assets/dom.js";
import { agentSelect, allTools, api, query } from "/ui/assets/api.js";
import { InputError, fieldError, kindOf, schemaField } from "/ui/assets/form.js";

export async function renderCall(page) {
  const tools = (await allTools()).sort((a, b) => a.name.localeCompare(b.name));
  const pick = el("select", { id: "call-tool" },
    el("option", { value: "" }, "Choose a tool…"),
    tools.map((t) => el("option", { value: t.name }, t.name)));
  const body = el("div");
  // The profile the call is made as (an operator may choose any).
  const [agentLabel, agent] = agentSelect("call-agent");
  page.section.append(el("div", { class: "toolbar" }, el("label", { for: "call-tool" }, "Tool"), pick, agentLabel, agent), body);

  let generation = 0;
  pick.addEventListener("change", () => {
    const mine = ++generation;
    body.replaceChildren();
    if (!pick.value) return;
    api(`/v1/tools/${encodeURIComponent(pick.value)}`).then((def) => {
      if (mine !== generation) return;
      replace(body, callView(def, page, () => agent.value));
      page.clear();
    }, page.fail);
  });
}

/** The chosen tool: its description, the arguments form, and the answer once called. */
function callView(def, page, agent) {
  const schema = def.inputSchema ?? {};
  const formable = kindOf(schema) === "object";
  const fields = formable
    ? Object.entries(schema.properties).map(([key, sub]) => [key, schemaField(sub, key, key, (schema.required ?? []).includes(key))])
    : [];
  // No properties and nothing else said: the tool takes no arguments; anything else the form cannot express is raw JSON.
  const takesNothing = !formable && !schema.oneOf && !schema.anyOf && !schema.allOf && typeof schema.additionalProperties !== "object";
  const raw = el("input", { id: "call-raw", type: "checkbox", checked: !formable && !takesNothing });
  const json = el("textarea", { id: "call-json", name: "arguments", rows: 10, class: "json", "aria-describedby": "call-json-error", value: "{}" });
  const jsonError = el("span", { id: "call-json-error", class: "field-error", hidden: true });
  const fieldBox = el("div", { class: "fields" }, fields.length ? fields.map(([, f]) => f.node) : el("p", { class: "muted" }, "This tool takes no arguments."));
  const rawBox = el("div", { class: "field" }, el("label", { for: "call-json" }, "Arguments (JSON object)"), json, jsonError);
  const submit = el("button", { id: "call-submit", type: "submit" }, "Call");
  const result = el("div", { id: "call-result" });

  const fromForm = () => {
    const args = {};
    for (const [key, f] of fields) {
      const v = f.read();
      if (v !== undefined) args[key] = v;
    }
    return args;
  };
  const fromJson = () => {
    fieldError(json, jsonError);
    let args;
    try {
      args = JSON.parse(json.value || "{}");
    } catch (e) {
      fieldError(json, jsonError, `Not valid JSON: ${e.message}`);
    }
    if (!args || typeof args !== "object" || Array.isArray(args)) fieldError(json, jsonError, "The arguments must be a JSON object.");
    return args;
  };
  const showRaw = () => {
    if (raw.checked) {
      try {
        json.value = pretty(fromForm());
      } catch {
        // keep the last JSON; the form shows what is wrong
      }
    }
    fieldBox.hidden = raw.checked;
    rawBox.hidden = !raw.checked;
  };
  raw.addEventListener("change", showRaw);
  showRaw();

  const form = el("form", { id: "call-form", novalidate: true },
    el("div", { class: "field check" }, raw, el("label", { for: "call-raw" }, "Raw JSON")),
    fieldBox, rawBox, submit);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    let args;
    try {
      args = raw.checked ? fromJson() : fromForm();
    } catch (error) {
      if (error instanceof InputError) return error.cause?.focus();
      throw error;
    }
    submit.disabled = true;
    result.replaceChildren(el("p", { role: "status", class: "muted" }, "Calling…"));
    try {
      const path = `/ui/api/call/${encodeURIComponent(def.name)}?${query({ agent: agent() })}`;
      const answer = await api(path, { method: "POST", body: args, acceptCall: true });
      replace(result, callAnswer(answer));
      page.clear();
    } catch (error) {
      result.replaceChildren();
      page.fail(error);
    } finally {
      submit.disabled = false;
    }
  });

  return [
    el("h2", null, el("code", null, def.name)),
    el("p", { id: "call-description", class: "description" }, def.description ?? ""),
    form, result,
  ];
}

/** A call's answer: the text the model sees, the JSON value, and what else came back. */
function callAnswer(answer) {
  return [
    el("h2", null, "Answer ", answer.is_error ? el("span", { class: "badge" }, "error") : el("span", { class: "badge ok" }, "ok"),
      answer.error_kind ? el("span", { class: "muted" }, ` ${answer.error_kind}`) : null),
    el("pre", { id: "call-answer", tabindex: "0", dataset: { error: String(!!answer.is_error) } }, answer.text ?? ""),
    "value" in answer ? [el("h3", null, "Value"), el("pre", { id: "call-value", tabindex: "0" }, pretty(answer.value))] : null,
    answer.upstream ? [el("h3", null, "From the upstream server"), el("pre", { tabindex: "0" }, pretty(answer.upstream))] : null,
  ];
}
