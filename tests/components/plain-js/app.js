// A component that knows nothing about Quiver: world `acme:plain/scripted`
// of tests/components/wit/plain.wit, built with componentize-js (build.sh).
//
// componentize-js conventions: an exported interface is an exported object
// named after it (camelCase functions: `read-file` is `readFile`); a record
// is a plain object with camelCase fields; an enum case is its name as a
// string; `option<T>` is the value or `undefined`; a `result<T, E>` returns
// T, and throwing a value that is not an Error (here a string) gives the
// error case (an Error thrown would trap).

const LIMIT = 10000;

// Calls this instance has served.
let calls = 0;

export const text = {
  count(text) {
    const words = text.split(/\s+/).filter((w) => w !== "").length;
    const lines = 1 + (text.match(/\n/g) ?? []).length;
    // Unicode scalar values (the string iterator yields code points).
    const chars = BigInt([...text].length);
    return { words, lines, chars };
  },

  recase(text, to) {
    return to === "upper" ? text.toUpperCase() : text.toLowerCase();
  },

  repeat(text, times, separator) {
    const sep = separator ?? " ";
    const length = [...text].length * times + [...sep].length * Math.max(times - 1, 0);
    if (length > LIMIT) throw `the result would be ${length} characters, more than ${LIMIT}`;
    return Array(times).fill(text).join(sep);
  },
};

export const probe = {
  // StarlingMonkey gives JavaScript no file system API (this component
  // imports no wasi:filesystem interface), so reading always fails.
  readFile(path) {
    throw `no file system here (cannot read ${path})`;
  },

  // Nor does it expose the environment to JavaScript: no variable is set.
  envVar(name) {
    return undefined;
  },

  calls() {
    calls += 1;
    return calls;
  },
};
