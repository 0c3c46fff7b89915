//! jq filters with jaq (jaq-core, jaq-std, jaq-json).

use std::collections::BTreeMap;

use jaq_core::load::{self, Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, compile, data};
use jaq_json::{Num, Val};
use quiver_sdk::prelude::*;
use serde_json::Value;

use crate::prelude::prelude;

/// Longest jq program, in bytes.
const MAX_FILTER: usize = 20_000;

/// Input of `query`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Query {
    /// jq program, e.g. `.items[] | select(.price > 10) | {name, price}` or
    /// `map(.tags) | add | unique`. The jq standard library is available (jaq dialect).
    pub filter: String,
    /// The JSON value the filter reads as `.`.
    #[schemars(with = "Value")]
    pub input: Val,
    /// Variables for the filter, like `jq --argjson`: `{"min": 10}` is `$min` in the filter.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Value>")]
    pub args: BTreeMap<String, Val>,
    /// Stop after this many outputs, at most 100000.
    #[serde(default = "default_max_outputs")]
    #[schemars(range(min = 1, max = 100000))]
    pub max_outputs: u32,
}

/// The outputs of a jq filter.
#[derive(Serialize, JsonSchema)]
pub struct QueryResult {
    /// Every value the filter produced, in order (jq prints each on its own line).
    #[schemars(with = "Vec<Value>")]
    pub outputs: Vec<Json>,
    /// True when the filter had more outputs than `max_outputs`.
    pub truncated: bool,
}

/// A jaq value that serializes as JSON, keeping the order of object keys. Like jq, NaN
/// becomes `null` and infinities the largest finite floats; byte strings become text
/// (invalid UTF-8 replaced) and non-string object keys their JSON text.
pub struct Json(pub Val);

impl Serialize for Json {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match &self.0 {
            Val::Null => s.serialize_unit(),
            Val::Bool(b) => s.serialize_bool(*b),
            Val::Num(n) => serialize_num(n, s),
            Val::TStr(b) | Val::BStr(b) => s.serialize_str(&text(b)),
            Val::Arr(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items.iter() {
                    seq.serialize_element(&Json(item.clone()))?;
                }
                seq.end()
            }
            Val::Obj(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries.iter() {
                    let key = match k {
                        Val::TStr(b) | Val::BStr(b) => text(b),
                        other => other.to_string(),
                    };
                    map.serialize_entry(&key, &Json(v.clone()))?;
                }
                map.end()
            }
        }
    }
}

fn serialize_num<S: serde::Serializer>(n: &Num, s: S) -> Result<S::Ok, S::Error> {
    let float = |f: f64, s: S| {
        if f.is_nan() {
            s.serialize_unit()
        } else if f.is_infinite() {
            s.serialize_f64(f64::MAX.copysign(f))
        } else {
            s.serialize_f64(f)
        }
    };
    match n {
        Num::Int(i) => s.serialize_i64(*i as i64),
        Num::Float(f) => float(*f, s),
        // Big integers and decimal literals (kept verbatim by jaq): exact when they fit.
        other => {
            let text = other.to_string();
            if let Ok(i) = text.parse::<i64>() {
                s.serialize_i64(i)
            } else if let Ok(u) = text.parse::<u64>() {
                s.serialize_u64(u)
            } else {
                float(text.parse::<f64>().unwrap_or(f64::NAN), s)
            }
        }
    }
}

fn default_max_outputs() -> u32 {
    1000
}

/// Line and column (both from 1) of byte `offset` in `code`.
fn line_col(code: &str, offset: usize) -> (usize, usize) {
    let before = &code[..offset.min(code.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

/// Where `part`, a slice of `code`, starts, as `line L, column C`.
fn position(code: &str, part: &str) -> String {
    let (line, col) = line_col(code, load::span(code, part).start);
    format!("line {line}, column {col}")
}

/// What was found at an error: the offending text, shortened.
fn found(part: &str) -> String {
    if part.is_empty() {
        return "end of filter".to_owned();
    }
    let short: String = part.chars().take(20).collect();
    let more = if short.len() < part.len() { "…" } else { "" };
    format!("`{short}{more}`")
}

/// A readable message for the errors of loading (lexing, parsing) a program.
fn load_errors(code: &str, errors: load::Errors<&str, ()>) -> String {
    let mut messages = Vec::new();
    for (_, error) in errors {
        match error {
            load::Error::Io(errs) => {
                messages.extend(errs.into_iter().map(|(path, e)| format!("cannot import `{path}`: {e}")))
            }
            load::Error::Lex(errs) => messages.extend(
                errs.into_iter()
                    .map(|(expect, part)| format!("expected {} at {}", expect.as_str(), position(code, part))),
            ),
            load::Error::Parse(errs) => messages.extend(errs.into_iter().map(|(expect, part)| {
                format!("expected {}, found {} at {}", expect.as_str(), found(part), position(code, part))
            })),
        }
    }
    messages.join("; ")
}

/// A readable message for the errors of compiling a program.
fn compile_errors(code: &str, errors: compile::Errors<&str, ()>) -> String {
    let mut messages = Vec::new();
    for (_, errs) in errors {
        for (name, undefined) in errs {
            let arity = match &undefined {
                compile::Undefined::Filter(n) => format!("/{n}"),
                _ => String::new(),
            };
            messages.push(format!("undefined {} `{name}{arity}` at {}", undefined.as_str(), position(code, name)));
        }
    }
    messages.join("; ")
}

/// Load and compile `code` with the library definitions `defs` and the
/// global variables `vars`.
fn compile_with(
    code: &str,
    vars: &[String],
    defs: Vec<jaq_core::load::parse::Def<&'static str>>,
) -> Result<jaq_core::compile::Filter<jaq_core::Native<data::JustLut<Val>>>, ToolError> {
    let funs = jaq_core::funs().chain(jaq_std::funs()).chain(jaq_json::funs());
    let arena = Arena::default();
    let modules = Loader::new(defs)
        .load(&arena, File { code, path: () })
        .map_err(|e| ToolError::invalid_input(format!("jq syntax error: {}", load_errors(code, e))))?;
    Compiler::default()
        .with_funs(funs)
        .with_global_vars(vars.iter().map(String::as_str))
        .compile(modules)
        .map_err(|e| ToolError::invalid_input(format!("jq error: {}", compile_errors(code, e))))
}

/// Run jq `code` on `input` with `$name` variables; at most `max` outputs.
pub fn run_jq(code: &str, input: Val, args: BTreeMap<String, Val>, max: usize) -> Result<QueryResult, ToolError> {
    if code.len() > MAX_FILTER {
        return Err(ToolError::invalid_input(format!("the filter is {} bytes; the limit is {MAX_FILTER}", code.len())));
    }
    let mut names = Vec::with_capacity(args.len());
    let mut values = Vec::with_capacity(args.len());
    for (name, value) in args {
        let name = name.strip_prefix('$').unwrap_or(&name).to_owned();
        let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(ToolError::invalid_input(format!(
                "argument name `{name}` is not a jq identifier (letters, digits and `_`, not starting with a digit)"
            )));
        }
        names.push(format!("${name}"));
        values.push(value);
    }

    // Only the library definitions the program needs: compiling all of
    // them would take most of a call. Should that ever refuse a program,
    // the whole library decides (and words the error).
    let filter = compile_with(code, &names, prelude().for_program(code))
        .or_else(|_| compile_with(code, &names, prelude().all().collect()))?;

    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new(values));
    let mut outputs = Vec::new();
    let mut truncated = false;
    for result in filter.id.run((ctx, input)) {
        if outputs.len() == max {
            truncated = true;
            break;
        }
        match result {
            Ok(v) => outputs.push(Json(v)),
            Err(exn) => {
                let message = match exn.get_err() {
                    Ok(error) => format!("jq runtime error: {error}"),
                    Err(exn) => match exn.get_halt() {
                        Ok(0) => break,
                        Ok(code) => format!("the filter halted with exit code {code}"),
                        Err(_) => "jq runtime error".to_owned(),
                    },
                };
                let after = match outputs.len() {
                    0 => String::new(),
                    n => format!(" (after {n} output{})", if n == 1 { "" } else { "s" }),
                };
                return Err(ToolError::invalid_input(format!("{message}{after}")));
            }
        }
    }
    Ok(QueryResult { outputs, truncated })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn val(v: Value) -> Val {
        Val::deserialize(v).unwrap()
    }

    fn jq(code: &str, input: Value) -> Result<Vec<Value>, ToolError> {
        run_jq(code, val(input), BTreeMap::new(), 100).map(|r| json(r.outputs))
    }

    fn json(outputs: Vec<Json>) -> Vec<Value> {
        outputs.iter().map(|j| serde_json::to_value(j).unwrap()).collect()
    }

    #[test]
    fn runs_filters() {
        let input = json!({"items": [{"n": "a", "p": 5}, {"n": "b", "p": 20}]});
        assert_eq!(jq(".items[] | select(.p > 10) | .n", input).unwrap(), vec![json!("b")]);
        assert_eq!(jq("[range(3)] | add / 2", json!(null)).unwrap(), vec![json!(1.5)]);
        assert_eq!(jq("{a: 1} | keys", json!(null)).unwrap(), vec![json!(["a"])]);
        assert_eq!(jq("nan, infinite", json!(null)).unwrap(), vec![json!(null), json!(f64::MAX)]);
    }

    #[test]
    fn binds_args_in_order() {
        let args = BTreeMap::from([("a".to_owned(), val(json!(1))), ("b".to_owned(), val(json!("x")))]);
        let out = run_jq("[$a, $b]", Val::Null, args, 10).unwrap();
        assert_eq!(json(out.outputs), vec![json!([1, "x"])]);
    }

    #[test]
    fn reports_errors() {
        let e = jq(".a | foo(1)", json!({})).unwrap_err().to_string();
        assert!(e.contains("undefined filter `foo/1`"), "{e}");
        let e = jq(".a | [", json!({})).unwrap_err().to_string();
        assert!(e.contains("syntax error"), "{e}");
        let e = jq(".[] | .a", json!([{}, 1])).unwrap_err().to_string();
        assert!(e.contains("cannot index 1") && e.contains("after 1 output"), "{e}");
        println!("{}", jq(".a | foo(1) | $x", json!({})).unwrap_err());
        println!("{}", jq("{a: }", json!({})).unwrap_err());
        println!("{}", jq("\"abc", json!({})).unwrap_err());
    }

    /// A program compiled with only the library definitions it needs means
    /// what it means with the whole library, and needs far fewer of them.
    #[test]
    fn the_needed_part_of_the_library_means_the_same() {
        let programs = [
            ".items[] | .name",
            "map(.p) | add / length",
            "[.items[] | select(.p > 10)] | sort_by(.p) | reverse | first",
            "group_by(.p > 5) | map(length)",
            "to_entries | from_entries | with_entries(.value |= tostring)",
            "paths(type == \"number\") | tostring",
            "[.. | numbers] | unique | join(\",\")",
            "@base64 \"\\(.items[0].n)\" | @base64d",
            "[limit(3; repeat(1))], [range(0; 10; 3)], ([1,2] | combinations | tostring)",
            "[splits(\", *\"; null)] // \"none\"",
            "\"a-b-c\" | test(\"b\") and (ascii_upcase | ltrimstr(\"A\") | length > 0)",
            "def f(g): [.[]? | g]; f(.n?) | any",
            "reduce .items[] as {p: $p} (0; . + $p)",
            "foreach (1, 2, 3) as $x (0; . + $x; [$x, .])",
            ".items | to_entries | map(\"\\(.key)=\\(.value.n)\") | @json",
            "getpath([\"items\", 0]) | keys | inside([\"n\", \"p\", \"q\"])",
            "[.items[].p] | min, max, (sort | .[1:]), (indices(20))",
            "now | type, (\"2024-06-01T12:00:00Z\" | fromdate | todate)",
            "type, (tojson | length), ([] | first? // 0)",
            "try error(\"x\") catch ., (.items | has(0)), (.[0]? // \"none\")",
            "[.items[] | .n] | @sh, @html, @uri, @text, @json",
            "walk(if type == \"number\" then . + 1 else . end)",
            "splits(\"a\")?, ltrimstr(1), (tojson | fromjson), ([1, [2]] | flatten)",
            "[paths(scalars)] | map(map(tostring) | join(\".\"))",
            "del(.items[0]) | .items |= map(.p *= 2) | .items[0].p += 1",
        ];
        let input = serde_json::json!({"items": [{"n": "a", "p": 5}, {"n": "b", "p": 20}]});
        let run = |code: &str, defs: Vec<jaq_core::load::parse::Def<&'static str>>| -> String {
            match compile_with(code, &[], defs) {
                Err(e) => format!("error: {e}"),
                Ok(filter) => {
                    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
                    let outputs: Vec<String> = filter
                        .id
                        .run((ctx, val(input.clone())))
                        .take(50)
                        .map(|r| match r {
                            Ok(v) => serde_json::to_string(&Json(v)).unwrap(),
                            Err(e) => format!("{:?}", e.get_err().map(|e| e.to_string()).ok()),
                        })
                        .collect();
                    outputs.join("\n")
                }
            }
        };
        let prelude = prelude();
        let all = prelude.all().count();
        for code in programs {
            let needed = prelude.for_program(code);
            assert!(needed.len() < all / 2, "{code}: {} of {all} definitions", needed.len());
            let (pruned, whole) = (run(code, needed), run(code, prelude.all().collect()));
            assert!(!whole.starts_with("error"), "{code}: {whole}");
            assert_eq!(pruned, whole, "{code}");
        }
        // Not a plain program (a module directive): the whole library.
        assert_eq!(prelude.for_program("include \"x\"; .").len(), all);
    }

    #[test]
    fn truncates_infinite_streams() {
        let out = run_jq("repeat(1)", Val::Null, BTreeMap::new(), 5).unwrap();
        assert_eq!((out.outputs.len(), out.truncated), (5, true));
    }
}
