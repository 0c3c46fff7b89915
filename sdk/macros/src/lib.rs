//! The `#[plugin]` attribute of `quiver-sdk`. See that crate's docs.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::quote;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, ExprArray, ExprLit, FnArg, Item, ItemFn, ItemMod, Lit, Meta, ReturnType, Token, Type};

mod stub;

/// Directory of the `quiver:plugin` WIT package, fixed when this crate is built.
const WIT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../wit");

use quiver_contract::MAX_SUMMARY_CHARS;

/// Turn a module of functions into a Quiver plugin component.
///
/// Options (all optional): `name = "..."` (default: the module's name with
/// `_` as `-`), `kind = "tool" | "connector" | "database"` (default `tool`),
/// `version = "..."` (default: the crate's version), `categories = [...]`.
/// The module's doc comment is the plugin's one-line description.
#[proc_macro_attribute]
pub fn plugin(args: TokenStream, item: TokenStream) -> TokenStream {
    match expand(args.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

use quiver_contract::{Access, Kind};

struct Options {
    name: Option<String>,
    kind: Kind,
    version: Option<String>,
    categories: Vec<String>,
    /// The module's `#[init]` function, if it has one.
    init: Option<syn::Ident>,
}

struct Action {
    name: String,
    func: syn::Ident,
    description: String,
    summary: String,
    access: Access,
    takes_input: bool,
    fallible: bool,
}

fn expand(args: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    let mut options = parse_options(args)?;
    let mut module: ItemMod = syn::parse2(item)?;
    let Some((_, items)) = module.content.as_mut() else {
        return Err(syn::Error::new_spanned(&module, "#[plugin] needs an inline module: `mod name { ... }`"));
    };

    let mod_ident = module.ident.clone();
    let name = match &options.name {
        Some(name) => name.clone(),
        None if mod_ident.to_string().contains('_') => {
            let dashed = mod_ident.to_string().replace('_', "-");
            return Err(syn::Error::new(
                mod_ident.span(),
                format!(
                    "plugin names use `-`, not `_`: name the plugin explicitly, #[plugin(name = \"{dashed}\")], or \
                     name the module without `_`"
                ),
            ));
        }
        None => mod_ident.to_string(),
    };
    check_plugin_name(&name, module.ident.span())?;
    let description = summary_of(&docs(&module.attrs), module.ident.span(), "the plugin")?;
    let version = match &options.version {
        Some(v) => v.clone(),
        None => std::env::var("CARGO_PKG_VERSION").unwrap_or_else(|_| "0.0.0".into()),
    };

    let mut actions = Vec::new();
    for item in items.iter_mut() {
        let Item::Fn(func) = item else { continue };
        if let Some(ident) = take_init(func)? {
            if options.init.is_some() {
                return Err(syn::Error::new_spanned(&func.sig, "a plugin has at most one #[init] function"));
            }
            options.init = Some(ident);
        } else if let Some(action) = take_action(func)? {
            actions.push(action);
        }
    }
    if actions.is_empty() {
        return Err(syn::Error::new_spanned(
            &module.ident,
            "a plugin needs at least one action: a `pub fn` in the module",
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for a in &actions {
        if !seen.insert(a.name.clone()) {
            return Err(syn::Error::new_spanned(&a.func, format!("duplicate action `{}`", a.name)));
        }
    }
    if options.kind == Kind::Database {
        check_database_actions(&actions, &module.ident)?;
    }

    // Natively the glue is compiled out (see `glue`), so nothing calls the actions.
    module.attrs.push(syn::parse_quote!(#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]));
    let stub = stub::encode(&name, &version, options.kind, &description, &options.categories, &actions)
        .map_err(|problem| syn::Error::new_spanned(&module.ident, problem))?;
    let glue = glue(&options, &mod_ident, &name, &version, &description, &actions, &stub);
    Ok(quote! {
        #module
        #glue
    })
}

fn parse_options(args: TokenStream2) -> syn::Result<Options> {
    let mut options = Options { name: None, kind: Kind::Tool, version: None, categories: Vec::new(), init: None };
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
            _ => {
                return Err(syn::Error::new_spanned(
                    &nv.path,
                    "unknown option: expected name, kind, version or categories",
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

fn check_plugin_name(name: &str, span: Span) -> syn::Result<()> {
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
fn docs(attrs: &[Attribute]) -> String {
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

/// The first paragraph of a doc comment, on one line, checked for length.
fn summary_of(docs: &str, span: Span, what: &str) -> syn::Result<String> {
    let summary = quiver_contract::summary_of(docs);
    if summary.is_empty() {
        return Err(syn::Error::new(
            span,
            format!("{what} needs a doc comment: its first paragraph is the one-line description models see"),
        ));
    }
    if summary.chars().count() > MAX_SUMMARY_CHARS {
        return Err(syn::Error::new(
            span,
            format!(
                "the first paragraph of the doc comment of {what} is {} characters; keep it to {MAX_SUMMARY_CHARS} \
                 (put details in a second paragraph)",
                summary.chars().count()
            ),
        ));
    }
    Ok(summary)
}

/// If `func` is marked `#[init]`, strip the mark, let the glue call it and
/// return its name. It must be a private `fn()` (a `pub fn` is an action).
fn take_init(func: &mut ItemFn) -> syn::Result<Option<syn::Ident>> {
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
fn take_action(func: &mut ItemFn) -> syn::Result<Option<Action>> {
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
            FnArg::Typed(_) => true,
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

fn is_result(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Result"))
}

fn check_database_actions(actions: &[Action], span: &syn::Ident) -> syn::Result<()> {
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

/// The callable form of an action: a closure from the decoded input to a `Result`.
fn callable(mod_ident: &syn::Ident, a: &Action, kind: Kind) -> TokenStream2 {
    let func = &a.func;
    let path = quote!(super::#mod_ident::#func);
    let call = if a.takes_input { quote!(#path(input)) } else { quote!(#path()) };
    let call = if kind == Kind::Database && a.name == "query" {
        quote!(#call.map(::quiver_sdk::database::QueryResult::from))
    } else {
        call
    };
    let body = if a.fallible { call } else { quote!(::core::result::Result::Ok::<_, ::quiver_sdk::ToolError>(#call)) };
    if a.takes_input { quote!(|input| #body) } else { quote!(|_: __rt::NoInput| #body) }
}

fn glue(
    options: &Options,
    mod_ident: &syn::Ident,
    name: &str,
    version: &str,
    description: &str,
    actions: &[Action],
    stub: &[u8],
) -> TokenStream2 {
    let world = options.kind.world();
    // With an #[init] function, the component also exports `wizer-initialize`,
    // which the host runs once and snapshots (see the host's `preinit`); the
    // world is the kind's world plus that export, declared inline.
    let (world, inline, init_export) = match &options.init {
        None => (world.to_owned(), None, None),
        Some(init) => {
            let version = quiver_contract::CONTRACT.split_once('@').map_or("", |(_, v)| v);
            let inline = format!(
                "package quiver:initialized;\nworld plugin {{\n    include {world}@{version};\n    export {}: func();\n}}\n",
                quiver_contract::INIT_EXPORT
            );
            let export = quote! {
                impl Guest for Component {
                    fn wizer_initialize() {
                        __rt::install_panic_hook();
                        super::#mod_ident::#init();
                    }
                }
            };
            ("quiver:initialized/plugin".to_owned(), Some(quote!(inline: #inline,)), Some(export))
        }
    };
    let kind_variant = match options.kind {
        Kind::Tool => quote!(Tool),
        Kind::Connector => quote!(Connector),
        Kind::Database => quote!(Database),
    };
    // The interfaces of this contract version, as wit-bindgen names them.
    let interface = |name: &str| {
        let (package, version) = quiver_contract::CONTRACT.split_once('@').expect("a versioned contract");
        format!("{package}/{name}@{version}")
    };
    let (types, log, config, sql) = (interface("types"), interface("log"), interface("config"), interface("sql"));
    let mut with = quote! {
        #types: ::quiver_sdk::wit::quiver::plugin::types,
        #log: ::quiver_sdk::wit::quiver::plugin::log,
        #config: ::quiver_sdk::wit::quiver::plugin::config,
    };
    match options.kind {
        Kind::Tool => {}
        Kind::Connector => with.extend(quote! {
            "wasi:http/outgoing-handler@0.2.12": ::quiver_sdk::wit::wasi::http::outgoing_handler,
            "wasi:http/types@0.2.12": ::quiver_sdk::wit::wasi::http::types,
            "wasi:io/poll@0.2.12": ::quiver_sdk::wit::wasi::io::poll,
            "wasi:io/error@0.2.12": ::quiver_sdk::wit::wasi::io::error,
            "wasi:io/streams@0.2.12": ::quiver_sdk::wit::wasi::io::streams,
            "wasi:clocks/monotonic-clock@0.2.12": ::quiver_sdk::wit::wasi::clocks::monotonic_clock,
        }),
        Kind::Database => with.extend(quote! {
            #sql: ::quiver_sdk::wit::quiver::plugin::sql,
        }),
    }

    let categories = &options.categories;
    let names: Vec<&str> = actions.iter().map(|a| a.name.as_str()).collect();
    let manifest_actions = actions.iter().map(|a| {
        let name = &a.name;
        let description = &a.description;
        let access = match a.access {
            Access::Read => quote!(Read),
            Access::Write => quote!(Write),
            Access::Admin => quote!(Admin),
        };
        let f = callable(mod_ident, a, options.kind);
        quote! {{
            let f = #f;
            __rt::action(#name, #description, __rt::Access::#access, __rt::input_schema(&f), __rt::output_schema(&f))
        }}
    });
    let dispatch = actions.iter().map(|a| {
        let name = &a.name;
        let f = callable(mod_ident, a, options.kind);
        quote!(#name => __rt::call(&input, #f),)
    });
    let describe = quote! {
        __rt::manifest(
            #name,
            #version,
            __rt::Kind::#kind_variant,
            #description,
            &[#(#categories),*],
            vec![#(#manifest_actions),*],
        )
    };
    let database_export = (options.kind == Kind::Database).then(|| database_export(mod_ident));
    let stub_len = stub.len();
    let stub_bytes = syn::LitByteStr::new(stub, Span::call_site());
    let wit_dir = WIT_DIR;

    quote! {
        // The component glue exists only in the wasm build: natively the
        // crate is a plain library (its unit tests run on the host), and the
        // WIT export names are not valid native symbol names.
        #[cfg(target_family = "wasm")]
        #[doc(hidden)]
        #[allow(missing_docs, unused, unsafe_code, clippy::all)]
        mod __quiver_plugin {
            use ::quiver_sdk::__rt;

            ::quiver_sdk::__rt::wit_bindgen::generate!({
                path: #wit_dir,
                #inline
                world: #world,
                runtime_path: "::quiver_sdk::__rt::wit_bindgen::rt",
                with: { #with },
            });

            struct Component;

            impl exports::quiver::plugin::plugin::Guest for Component {
                fn describe() -> __rt::Manifest {
                    #describe
                }

                fn invoke(action: String, input: String) -> Result<String, __rt::WitError> {
                    __rt::install_panic_hook();
                    match action.as_str() {
                        #(#dispatch)*
                        _ => Err(__rt::unknown_action(&action, &[#(#names),*])),
                    }
                }
            }

            #database_export

            #init_export

            export!(Component);

            /// Tier-1 stub read by the host without compiling this component.
            #[used]
            #[unsafe(link_section = "quiver:stub")]
            static QUIVER_STUB: [u8; #stub_len] = *#stub_bytes;
        }

        /// Natively (where the component glue is compiled out): what the
        /// component's `describe()` returns, as the JSON of its
        /// `quiver:manifest` section, so a build that embeds the component
        /// can write the section without running it (Quiver's bundled
        /// plugins do; the host checks it against `describe()` at first load).
        #[cfg(not(target_family = "wasm"))]
        #[doc(hidden)]
        #[allow(missing_docs, unused, clippy::all)]
        pub mod __quiver_manifest {
            use ::quiver_sdk::__rt;

            /// The JSON of the `quiver:manifest` section.
            pub fn section() -> Vec<u8> {
                __rt::manifest_section(#describe)
            }
        }
    }
}

fn database_export(mod_ident: &syn::Ident) -> TokenStream2 {
    quote! {
        impl exports::quiver::plugin::database::Guest for Component {
            fn list_tables() -> Result<Vec<exports::quiver::plugin::database::Table>, __rt::WitError> {
                __rt::install_panic_hook();
                let tables = super::#mod_ident::list_tables().map_err(|e| __rt::WitError::from(::quiver_sdk::ToolError::from(e)))?;
                Ok(tables
                    .into_iter()
                    .map(|t| exports::quiver::plugin::database::Table {
                        name: t.name,
                        description: t.description,
                        column_count: t.column_count,
                    })
                    .collect())
            }

            fn describe_table(name: String) -> Result<exports::quiver::plugin::database::TableSchema, __rt::WitError> {
                __rt::install_panic_hook();
                let t = super::#mod_ident::describe_table(::quiver_sdk::database::DescribeTable { table: name })
                    .map_err(|e| __rt::WitError::from(::quiver_sdk::ToolError::from(e)))?;
                Ok(exports::quiver::plugin::database::TableSchema {
                    name: t.name,
                    description: t.description,
                    columns: t
                        .columns
                        .into_iter()
                        .map(|c| exports::quiver::plugin::database::Column {
                            name: c.name,
                            data_type: c.data_type,
                            nullable: c.nullable,
                            description: c.description,
                        })
                        .collect(),
                    primary_key: t.primary_key,
                })
            }

            fn query(statement: String, max_rows: u32) -> Result<::quiver_sdk::sql::Rows, __rt::WitError> {
                __rt::install_panic_hook();
                super::#mod_ident::query(::quiver_sdk::database::Query { sql: statement, max_rows })
                    .map_err(|e| __rt::WitError::from(::quiver_sdk::ToolError::from(e)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    /// A module name with `_` is not turned into a plugin name in silence.
    #[test]
    fn an_underscore_module_needs_an_explicit_name() {
        let error = super::expand(
            quote!(),
            quote!(
                mod my_units {}
            ),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("#[plugin(name = \"my-units\")]"), "{error}");
        let named = super::expand(
            quote!(name = "my-units"),
            quote!(
                /// Convert units.
                mod my_units {}
            ),
        );
        // (It fails for want of an action, not for its name.)
        let named = named.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(!named.contains("plugin names use"), "{named}");
    }

    /// `#[init]` goes on one private `fn()`; anything else is refused with the rule.
    #[test]
    fn init_is_one_private_plain_function() {
        let expand = |body: proc_macro2::TokenStream| {
            super::expand(
                quote!(),
                quote!(
                    /// Does things.
                    mod things {
                        /// Do a thing.
                        pub fn act() -> u32 { 1 }
                        #body
                    }
                ),
            )
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
        };
        assert_eq!(
            expand(quote!(
                #[init]
                fn warm() {}
            )),
            ""
        );
        for wrong in [
            quote!(
                #[init]
                pub fn warm() {}
            ),
            quote!(
                #[init]
                fn warm(n: u32) {}
            ),
            quote!(
                #[init]
                fn warm() -> u32 {
                    1
                }
            ),
            quote!(
                #[init(now)]
                fn warm() {}
            ),
        ] {
            let error = expand(wrong);
            assert!(error.contains("#[init]"), "{error}");
        }
        let twice = expand(quote!(
            #[init]
            fn a() {}
            #[init]
            fn b() {}
        ));
        assert!(twice.contains("at most one #[init]"), "{twice}");
    }
}
