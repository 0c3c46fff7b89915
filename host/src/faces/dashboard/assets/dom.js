// The dashboard's DOM and formatting helpers: elements from DOM calls only, text as text nodes.

/** Append children: strings and numbers become text nodes; null/false are skipped. */
export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replace a node's children (arrays may nest). */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/** Make an element. attrs: `class`, `dataset`, `on<event>` handlers, `value`; the rest are attributes. */
export function el(tag, attrs, ...children) {
  const node = append(document.createElement(tag), children);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "value") node.value = value; // after the children: a select needs its options
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  return node;
}

export const intFormat = new Intl.NumberFormat("en-US");
const oneDecimal = new Intl.NumberFormat("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
export const DASH = "—";
export const tokens = (n) => (typeof n === "number" ? intFormat.format(n) : DASH);
export const ms = (n) => (typeof n === "number" ? oneDecimal.format(n) : DASH);
export const percent = (n) => (typeof n === "number" ? `${oneDecimal.format(n)} %` : DASH);
export const orDash = (v) => (v === null || v === undefined || v === "" ? DASH : String(v));
export const asText = (v) => (typeof v === "string" ? v : JSON.stringify(v));
export const pretty = (v) => JSON.stringify(v, null, 2);

/** A table cell; `num` right-aligns it. */
export const td = (content, num = false) => el("td", num ? { class: "num" } : null, content);

/** A table with `<th scope="col">` headers; a header starting with "#" is numeric. */
export function table(id, caption, headers) {
  const tbody = el("tbody");
  const head = headers.map((h) =>
    h.startsWith("#") ? el("th", { scope: "col", class: "num" }, h.slice(1)) : el("th", { scope: "col" }, h));
  const node = el("table", { id }, caption ? el("caption", null, caption) : null, el("thead", null, el("tr", null, head)), tbody);
  return { node, tbody };
}

/** Fill a tbody with rows, or one row saying there is nothing. */
export function fill(tbody, rows, columns, empty) {
  replace(tbody, rows.length ? rows : el("tr", null, el("td", { colspan: columns, class: "empty" }, empty)));
}
