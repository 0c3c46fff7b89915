//! Generating a plugin's glue: the component bindings for its kind's
//! world, the exports that decode input and call each action, and the stub
//! section.

use proc_macro2::{Span, TokenStream as TokenStream2};
use quiver_contract::{Access, Kind};
use quote::quote;

use crate::parse::{Action, Options};

/// Directory of the `quiver:plugin` WIT package, fixed when this crate is built.
const WIT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../wit");

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

pub(crate) fn glue(
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
    // An action the module does not declare: its fallback's, or unknown.
    let otherwise = match &options.fallback {
        Some(fallback) => quote!(_ => super::#fallback(&action, &input).map_err(__rt::WitError::from),),
        None => quote!(_ => Err(__rt::unknown_action(&action, &[#(#names),*])),),
    };
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
                        #otherwise
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
