//! The `#[plugin]` attribute of `quiver-sdk`. See that crate's docs.
//!
//! [`parse`] reads the module (options, actions, doc comments) and checks
//! it against the contract's rules; [`glue`] generates the bindings, the
//! exports and the [`stub`] section.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quiver_contract::Kind;
use quote::quote;
use syn::{Item, ItemMod};

mod glue;
mod parse;
mod stub;

use self::glue::glue;
use self::parse::{check_database_actions, check_plugin_name, docs, parse_options, summary_of, take_action, take_init};

/// Turn a module of functions into a Quiver plugin component.
///
/// Options (all optional): `name = "..."` (default: the module's name with
/// `_` as `-`), `kind = "tool" | "connector" | "database"` (default `tool`),
/// `version = "..."` (default: the crate's version), `categories = [...]`,
/// `fallback = path::to::function` (where calls of actions the module does
/// not declare go, as `fn(action: &str, input: &str) -> Result<String,
/// ToolError>` with the input as JSON text: for a plugin whose actions the
/// host configures, such as the OpenAPI connector).
/// The module's doc comment is the plugin's one-line description.
#[proc_macro_attribute]
pub fn plugin(args: TokenStream, item: TokenStream) -> TokenStream {
    match expand(args.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
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

    /// A doc comment is checked by the contract's own rule for one-line
    /// descriptions, so a control character fails the build, not the load.
    #[test]
    fn a_summary_with_a_control_character_fails_the_build() {
        let error = super::expand(
            quote!(),
            quote!(
                /// Does things.
                mod things {
                    #[doc = "Ring \u{7} the bell."]
                    pub fn act() -> u32 {
                        1
                    }
                }
            ),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(error.contains("control character U+0007"), "{error}");
        let long = super::expand(
            quote!(),
            quote!(
                /// Does things.
                mod things {
                    #[doc = "A very long summary that goes on and on about what it does, well past the limit the contract sets for one-line descriptions."]
                    pub fn act() -> u32 { 1 }
                }
            ),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(long.contains("put details in a second paragraph"), "{long}");
    }

    /// A model sends an action's arguments as one JSON object: an input
    /// that can never be one fails the build, saying what to take instead.
    #[test]
    fn an_input_that_is_not_an_object_fails_the_build() {
        for input in [quote!(x: u32), quote!(pair: (u32, u32)), quote!(names: Vec<String>), quote!(text: &str)] {
            let error = super::expand(
                quote!(),
                quote!(
                    /// Does things.
                    mod things {
                        /// Act.
                        pub fn act(#input) -> u32 { 1 }
                    }
                ),
            )
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
            assert!(
                error.contains("a JSON object of named arguments") && error.contains("struct with named fields"),
                "{input}: {error}"
            );
        }
        let fine = super::expand(
            quote!(),
            quote!(
                /// Does things.
                mod things {
                    /// Act.
                    pub fn act(input: Input) -> u32 {
                        1
                    }
                }
            ),
        );
        assert!(fine.is_ok());
    }
}
