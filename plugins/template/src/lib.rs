//! Quiver built-in tool plugin: render Jinja2 templates with MiniJinja.

use std::collections::BTreeMap;

use minijinja::value::{Kwargs, Rest, ValueKind, ValueOrKwargs};
use minijinja::{AutoEscape, Environment, State, UndefinedBehavior, Value};
use quiver_sdk::prelude::*;

/// Instructions one render may execute before it is stopped (runaway loops).
const FUEL: u64 = 50_000_000;
/// Longest template source, in bytes (each of `template` and the partials).
const MAX_SOURCE: usize = 1 << 20;

/// What happens when a template uses a variable or attribute the context does not have.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Default, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum Undefined {
    /// Any use of an undefined value is an error, even `{% if x %}`; test with `x is defined`.
    #[default]
    Strict,
    /// Like `strict`, but `{% if x %}` treats an undefined `x` as false.
    SemiStrict,
    /// Jinja2's default: undefined prints as an empty string and is false.
    Lenient,
}

/// Escaping applied to every `{{ ... }}` output.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Default, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum Escape {
    /// No escaping.
    #[default]
    None,
    /// Escape `< > & " '` for HTML/XML; mark trusted values with `|safe`.
    Html,
    /// Print every value as JSON (strings quoted), for JSON or YAML output.
    Json,
}

/// Input of `render`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Render {
    /// Jinja2 template, e.g. `Hello {{ user.name }}!{% for t in tags %} #{{ t }}{% endfor %}`.
    /// Filters (`upper`, `join`, `default`, `tojson`, `truncate`, `wordwrap`, ...), tests, macros
    /// and Python string/dict methods (`.split()`, `.items()`) are available.
    pub template: String,
    /// Variables of the template, a JSON object; keys keep their order when iterated. Default `{}`.
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub context: Option<Value>,
    /// Other templates by name, for `{% include "name" %}`, `{% extends "name" %}` and
    /// `{% import "name" as m %}`.
    #[serde(default)]
    pub partials: BTreeMap<String, String>,
    /// Handling of undefined variables; `strict` makes typos errors.
    #[serde(default)]
    pub undefined: Undefined,
    /// Escaping of output.
    #[serde(default)]
    pub autoescape: Escape,
    /// Remove the first newline after a block tag such as `{% endif %}`.
    #[serde(default)]
    pub trim_blocks: bool,
    /// Strip spaces and tabs before a block tag at the start of a line.
    #[serde(default)]
    pub lstrip_blocks: bool,
    /// Keep a final newline of the template (Jinja2 drops one).
    #[serde(default)]
    pub keep_trailing_newline: bool,
}

/// The rendered text.
#[derive(Serialize, JsonSchema)]
pub struct Rendered {
    /// The output of the template.
    pub text: String,
}

/// Name of the main template in error messages.
const MAIN: &str = "template";

/// A message for a template error: what, where, and the offending source text.
fn describe(error: &minijinja::Error, sources: &BTreeMap<&str, &str>) -> String {
    let mut message = error.to_string();
    let snippet = error
        .name()
        .and_then(|name| sources.get(name))
        .zip(error.range())
        .and_then(|(source, range)| source.get(range));
    if let Some(snippet) = snippet {
        let snippet: String = snippet.chars().take(80).collect();
        message.push_str(&format!(": `{snippet}`"));
    }
    // Errors inside included templates or macros carry the cause further down.
    let mut cause = std::error::Error::source(error);
    while let Some(e) = cause {
        message.push_str(&format!("; caused by: {e}"));
        cause = e.source();
    }
    message
}

/// Jinja2's `truncate` and `wordwrap` take positional arguments (`truncate(9)`), while
/// minijinja-contrib's take keywords only; these adapters name the positional ones and call
/// the contrib filters.
fn jinja2_signatures(env: &mut Environment) {
    /// Keyword arguments from `args` (positional values, maybe ending in the keyword ones).
    fn keywords(names: &[&str], args: Vec<ValueOrKwargs>) -> Result<Kwargs, minijinja::Error> {
        let mut args: Vec<Value> = args.into_iter().map(Value::from).collect();
        let given = match args.last() {
            Some(last) if last.is_kwargs() => Kwargs::try_from(args.pop().unwrap_or_default())?,
            _ => Kwargs::from_iter(Vec::<(String, Value)>::new()),
        };
        if args.len() > names.len() {
            return Err(minijinja::Error::new(
                minijinja::ErrorKind::TooManyArguments,
                format!("at most {} positional arguments: {}", names.len(), names.join(", ")),
            ));
        }
        let mut all: Vec<(String, Value)> = names.iter().map(|n| (*n).to_owned()).zip(args).collect();
        for key in given.args() {
            if all.iter().any(|(k, _)| k == key) {
                return Err(minijinja::Error::new(
                    minijinja::ErrorKind::TooManyArguments,
                    format!("`{key}` given both by position and by keyword"),
                ));
            }
            all.push((key.to_owned(), given.get::<Value>(key)?));
        }
        Ok(Kwargs::from_iter(all))
    }
    env.add_filter("truncate", |state: &mut State, value: &Value, args: Rest<ValueOrKwargs>| {
        let kwargs = keywords(&["length", "killwords", "end", "leeway"], args.0)?;
        minijinja_contrib::filters::truncate(state, value, kwargs)
    });
    env.add_filter("wordwrap", |value: &Value, args: Rest<ValueOrKwargs>| {
        let kwargs = keywords(&["width", "break_long_words", "wrapstring", "break_on_hyphens"], args.0)?;
        minijinja_contrib::filters::wordwrap(value, kwargs)
    });
}

/// Render `input.template` with its context.
pub fn render_template(input: Render) -> Result<String, ToolError> {
    for (name, source) in
        std::iter::once((MAIN, &input.template)).chain(input.partials.iter().map(|(n, s)| (n.as_str(), s)))
    {
        if source.len() > MAX_SOURCE {
            return Err(ToolError::invalid_input(format!(
                "template `{name}` is {} bytes; the limit is {MAX_SOURCE}",
                source.len()
            )));
        }
    }
    let context = input.context.unwrap_or_else(|| Value::from(BTreeMap::<String, Value>::new()));
    if context.kind() != ValueKind::Map {
        return Err(ToolError::invalid_input(format!(
            "context must be a JSON object of variables, not {}",
            context.kind()
        )));
    }

    let mut env = Environment::new();
    minijinja_contrib::add_to_environment(&mut env);
    jinja2_signatures(&mut env);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.set_undefined_behavior(match input.undefined {
        Undefined::Strict => UndefinedBehavior::Strict,
        Undefined::SemiStrict => UndefinedBehavior::SemiStrict,
        Undefined::Lenient => UndefinedBehavior::Lenient,
    });
    let escape = match input.autoescape {
        Escape::None => AutoEscape::None,
        Escape::Html => AutoEscape::Html,
        Escape::Json => AutoEscape::Json,
    };
    env.set_auto_escape_callback(move |_| escape.clone());
    env.set_fuel(Some(FUEL));
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(input.trim_blocks)
        .lstrip_blocks(input.lstrip_blocks)
        .keep_trailing_newline(input.keep_trailing_newline)
        .build()
        .map_err(ToolError::failed)?;
    env.set_syntax(syntax);

    let mut sources: BTreeMap<&str, &str> = input.partials.iter().map(|(n, s)| (n.as_str(), s.as_str())).collect();
    sources.insert(MAIN, &input.template);
    let fail = |e: minijinja::Error| ToolError::invalid_input(describe(&e, &sources));
    for (name, source) in &input.partials {
        env.add_template_owned(name.clone(), source.clone()).map_err(fail)?;
    }
    env.add_template_owned(MAIN, input.template.clone()).map_err(fail)?;
    env.get_template(MAIN).and_then(|t| t.render(context)).map_err(fail)
}

/// Render Jinja2 templates with JSON data (MiniJinja).
#[quiver_sdk::plugin(categories = ["text"])]
mod template {
    use super::*;

    /// Render a Jinja2 template with a JSON context; undefined variables are errors by default.
    pub fn render(input: Render) -> Result<Rendered, ToolError> {
        render_template(input).map(|text| Rendered { text })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Render with a context given as JSON text, decoded as the SDK does (keeping key order).
    fn render(template: &str, context: &str) -> Result<String, ToolError> {
        let text = format!(r#"{{"template": {}, "context": {context}}}"#, serde_json::to_string(template).unwrap());
        render_template(serde_json::from_str(&text).unwrap())
    }

    #[test]
    fn renders_with_order_and_python_methods() {
        let out = render(
            "{% for k, v in d.items() %}{{ k }}={{ v|upper }};{% endfor %} {{ s.split(',')|join('+') }}",
            r#"{"d": {"z": "a", "a": "b"}, "s": "x,y"}"#,
        );
        assert_eq!(out.unwrap(), "z=A;a=B; x+y");
    }

    #[test]
    fn jinja2_filter_signatures() {
        let out = render(
            "{{ s|truncate(9) }}|{{ s|truncate(length=12, end='~', leeway=0) }}|{{ s|wordwrap(8) }}",
            r#"{"s": "a long sentence"}"#,
        );
        // As Jinja2: cut at a word boundary, end included in the length; wrap at spaces.
        assert_eq!(out.unwrap(), "a...|a long~|a long\nsentence");
        assert!(render("{{ s|truncate(9, length=3) }}", r#"{"s": "x"}"#).is_err());
    }

    #[test]
    fn undefined_is_an_error() {
        let e = render("Hi {{ usr.name }}", r#"{"user": {"name": "x"}}"#).unwrap_err();
        assert!(e.to_string().contains("undefined"), "{e}");
        assert!(e.to_string().contains("usr.name"), "{e}");
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = render("a\n{% if x %}", r#"{"x": 1}"#).unwrap_err().to_string();
        assert!(e.contains("template:2"), "{e}");
    }

    #[test]
    fn context_must_be_an_object() {
        assert!(render("x", "[1]").is_err());
    }
}
