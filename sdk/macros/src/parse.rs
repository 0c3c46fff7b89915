//! Reading a `#[plugin]` module: the attribute's options, each action's
//! signature and doc comment, checked against the contract's rules.

use proc_macro2::{Span, TokenStream as TokenStream2};
use quiver_contract::{Access, Kind, MAX_SUMMARY_CHARS};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, ExprArray, ExprLit, FnArg, ItemFn, Lit, Meta, ReturnType, Token, Type};

pub(crate) struct Options {
    pub(crate) name: Option<String>,
    pub(crate) kind: Kind,
    pub(crate) version: Option<String>,
    pub(crate) categories: Vec<String>,
    /// The module's `#[init]` function, if it has one.
    pub(crate) init: Option<syn::Ident>,
    /// Where calls of actions the module does not declare go (a plugin
    /// whose actions the host configures), if anywhere.
    pub(crate) fallback: Option<syn::Path>,
}

pub(crate) struct Action {
    pub(crate) name: String,
    pub(crate) func: syn::Ident,
    pub(crate) description: String,
    pub(crate) summary: String,
    pub(crate) access: Access,
    pub(crate) takes_input: bool,
    pub(crate) fallible: bool,
}

pub(crate) fn parse_options(args: TokenStream2) -> syn::Result<Options> {
    let mut options =
        Options { name: None, kind: Kind::Tool, version: None, categories: Vec::new(), init: None, fallback: None };
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args)?;
    for meta in metas {
        let Meta::NameValue(nv) = &meta else {
            return Err(syn::Error::new_spanned(meta, "expected `key = value`"));
        };
        let key = nv.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
        match key.as_str() {
            "name" => options.name = Some(string_lit(&nv.value)?),
            "version" => options.version = Some(string_lit(&nv.value)?),
            "kind" => {
                let kind = string_lit(&nv.value)?;
                options.kind = Kind::parse(&kind).ok_or_else(|| {
                    syn::Error::new_spanned(
                        &nv.value,
                        format!("unknown kind `{kind}`: use \"tool\", \"connector\" or \"database\""),
                    )
                })?;
            }
            "categories" => {
                let Expr::Array(ExprArray { elems, .. }) = &nv.value else {
                    return Err(syn::Error::new_spanned(&nv.value, "expected a list: [\"math\", ...]"));
                };
                for e in elems {
                    let c = string_lit(e)?;
                    if let Some(problem) = quiver_contract::category_problem(&c) {
                        return Err(syn::Error::new_spanned(e, problem));
                    }
                    options.categories.push(c);
                }
            }
            "fallback" => {
                let Expr::Path(path) = &nv.value else {
                    return Err(syn::Error::new_spanned(&nv.value, "expected a function path: `fallback = run`"));
                };
                options.fallback = Some(path.path.clone());
            }
            _ => {
                return Err(syn::Error::new_spanned(
                    &nv.path,
                    "unknown option: expected name, kind, version, categories or fallback",
                ));
            }
        }
    }
    Ok(options)
}

fn string_lit(expr: &Expr) -> syn::Result<String> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Ok(s.value()),
        _ => Err(syn::Error::new_spanned(expr, "expected a string literal")),
    }
}

pub(crate) fn check_plugin_name(name: &str, span: Span) -> syn::Result<()> {
    match quiver_contract::plugin_name_problem(name) {
        None => Ok(()),
        Some(problem) => Err(syn::Error::new(span, problem)),
    }
}

fn check_action_name(name: &str, span: Span) -> syn::Result<()> {
    match quiver_contract::action_name_problem(name) {
        None => Ok(()),
        Some(problem) => Err(syn::Error::new(span, problem)),
    }
}

/// The doc comment of an item, with the conventional leading space removed.
pub(crate) fn docs(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if let Meta::NameValue(nv) = &attr.meta
            && nv.path.is_ident("doc")
            && let Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) = &nv.value
        {
            let value = s.value();
            lines.push(value.strip_prefix(' ').unwrap_or(&value).trim_end().to_owned());
        }
    }
    lines.join("\n").trim().to_owned()
}

/// The first paragraph of a doc comment, on one line, checked by the
/// contract's rule for one-line descriptions (the rule a stub is read by).
pub(crate) fn summary_of(docs: &str, span: Span, what: &str) -> syn::Result<String> {
    let summary = quiver_contract::summary_of(docs);
    if summary.is_empty() {
        return Err(syn::Error::new(
            span,
            format!("{what} needs a doc comment: its first paragraph is the one-line description models see"),
        ));
    }
    match quiver_contract::summary_problem(what, &summary) {
        None => Ok(summary),
        Some(problem) if summary.chars().count() > MAX_SUMMARY_CHARS => Err(syn::Error::new(
            span,
            format!("{problem}: it is the first paragraph of the doc comment (put details in a second paragraph)"),
        )),
        Some(problem) => Err(syn::Error::new(span, problem)),
    }
}

/// If `func` is marked `#[init]`, strip the mark, let the glue call it and
/// return its name. It must be a private `fn()` (a `pub fn` is an action).
pub(crate) fn take_init(func: &mut ItemFn) -> syn::Result<Option<syn::Ident>> {
    let Some(i) = func.attrs.iter().position(|a| a.path().is_ident("init")) else { return Ok(None) };
    let attr = func.attrs.remove(i);
    if !matches!(attr.meta, Meta::Path(_)) {
        return Err(syn::Error::new_spanned(attr, "#[init] takes no arguments"));
    }
    let plain = func.sig.inputs.is_empty()
        && matches!(func.sig.output, ReturnType::Default)
        && func.sig.asyncness.is_none()
        && func.sig.generics.params.is_empty();
    if matches!(func.vis, syn::Visibility::Public(_)) || !plain {
        return Err(syn::Error::new_spanned(
            &func.sig,
            "#[init] goes on a private `fn name()` with no arguments and no result (a `pub fn` is an action)",
        ));
    }
    // Visible to the glue, a sibling module; still not an action.
    func.vis = syn::parse_quote!(pub(super));
    Ok(Some(func.sig.ident.clone()))
}

/// If `func` is an action (a `pub fn`), strip its `#[action]` attribute and describe it.
pub(crate) fn take_action(func: &mut ItemFn) -> syn::Result<Option<Action>> {
    let marker = func.attrs.iter().position(|a| a.path().is_ident("action"));
    let is_pub = matches!(func.vis, syn::Visibility::Public(_));
    if !is_pub {
        if let Some(i) = marker {
            return Err(syn::Error::new_spanned(&func.attrs[i], "#[action] goes on a `pub fn`"));
        }
        return Ok(None);
    }
    let mut name = func.sig.ident.to_string();
    let mut access = Access::Read;
    if let Some(i) = marker {
        let attr = func.attrs.remove(i);
        if let Meta::List(_) = attr.meta {
            attr.parse_nested_meta(|meta| {
                let value: syn::LitStr = meta.value()?.parse()?;
                if meta.path.is_ident("access") {
                    access = Access::parse(&value.value())
                        .ok_or_else(|| meta.error("access is \"read\", \"write\" or \"admin\""))?;
                } else if meta.path.is_ident("name") {
                    name = value.value();
                } else {
                    return Err(meta.error("expected `access = \"...\"` or `name = \"...\"`"));
                }
                Ok(())
            })?;
        }
    }
    check_action_name(&name, func.sig.ident.span())?;
    if func.sig.asyncness.is_some() || !func.sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(&func.sig, "an action is a plain, non-generic, non-async function"));
    }
    let takes_input = match func.sig.inputs.len() {
        0 => false,
        1 => match &func.sig.inputs[0] {
            FnArg::Typed(typed) => {
                if let Some(what) = not_an_object(&typed.ty) {
                    return Err(syn::Error::new_spanned(&typed.ty, input_is_an_object(&what)));
                }
                true
            }
            FnArg::Receiver(r) => return Err(syn::Error::new_spanned(r, "an action takes no `self`")),
        },
        _ => {
            return Err(syn::Error::new_spanned(
                &func.sig.inputs,
                "an action takes at most one argument: a struct deriving Deserialize and JsonSchema",
            ));
        }
    };
    let fallible = match &func.sig.output {
        ReturnType::Default => {
            return Err(syn::Error::new_spanned(
                &func.sig,
                "an action returns its output: a type deriving Serialize and JsonSchema, or a Result of one",
            ));
        }
        ReturnType::Type(_, ty) => is_result(ty),
    };
    let description = docs(&func.attrs);
    let summary = summary_of(&description, func.sig.ident.span(), &format!("action `{name}`"))?;
    Ok(Some(Action { name, func: func.sig.ident.clone(), description, summary, access, takes_input, fallible }))
}

/// The words every language's helper uses for an input that is not an
/// object (a model always sends an action's arguments as one JSON object).
fn input_is_an_object(what: &str) -> String {
    format!(
        "an action's input is a JSON object of named arguments, not {what}: take a struct with named fields \
         (deriving Deserialize and JsonSchema), e.g. `pub struct Input {{ pub value: u32 }}`"
    )
}

/// What `ty` is, when it can never be a JSON object: a number, a string,
/// a boolean, a tuple, an array, a list, an optional value.
fn not_an_object(ty: &Type) -> Option<String> {
    match ty {
        Type::Tuple(_) => Some("a tuple".into()),
        Type::Array(_) | Type::Slice(_) => Some("an array".into()),
        Type::Reference(r) => not_an_object(&r.elem).or_else(|| Some("a reference".into())),
        Type::Paren(p) => not_an_object(&p.elem),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?.ident.to_string();
            const SCALARS: &[&str] = &[
                "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64",
                "bool", "char", "str", "String",
            ];
            const NOT_OBJECTS: &[&str] = &["Vec", "VecDeque", "HashSet", "BTreeSet", "Option"];
            if SCALARS.contains(&last.as_str()) {
                Some(format!("`{last}`"))
            } else if NOT_OBJECTS.contains(&last.as_str()) {
                Some(format!("a `{last}<…>`"))
            } else {
                None
            }
        }
        _ => None,
    }
}

fn is_result(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Result"))
}

pub(crate) fn check_database_actions(actions: &[Action], span: &syn::Ident) -> syn::Result<()> {
    let names: Vec<&str> = actions.iter().map(|a| a.name.as_str()).collect();
    let expected = ["list_tables", "describe_table", "query"];
    if names.len() != 3 || !expected.iter().all(|e| names.contains(e)) {
        return Err(syn::Error::new_spanned(
            span,
            "a database adapter has exactly three actions: list_tables(), describe_table(DescribeTable) \
             and query(Query), with the types of quiver_sdk::database",
        ));
    }
    for a in actions {
        if !a.fallible || a.takes_input == (a.name == "list_tables") {
            return Err(syn::Error::new_spanned(
                &a.func,
                "database actions return Result<_, ToolError>; only list_tables takes no argument",
            ));
        }
    }
    Ok(())
}
