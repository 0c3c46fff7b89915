//! The README's examples are real: its configuration parses, its plugin is
//! the bundled calc plugin.

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap()
}

/// The first fenced block of `language` after `heading`.
fn block_after(text: &str, heading: &str, language: &str) -> String {
    let rest = &text[text.find(heading).unwrap_or_else(|| panic!("no {heading}"))..];
    let start = rest.find(&format!("```{language}\n")).unwrap() + language.len() + 4;
    rest[start..start + rest[start..].find("```").unwrap()].to_owned()
}

#[test]
fn the_readme_configuration_example_is_valid() {
    let toml = block_after(&readme(), "### Configuration", "toml");
    let config = quiver::Config::parse(&toml, std::path::Path::new("/srv/quiver")).unwrap();
    assert_eq!(config.plugins_dir.as_deref(), Some(std::path::Path::new("/srv/quiver/plugins")));
    assert!(config.agents.contains_key("coder"));
    config.settings_for("weather").unwrap();
}

#[test]
fn the_readme_plugin_is_the_calc_plugin() {
    let shown = block_after(&readme(), "A complete plugin", "rust");
    let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../plugins/calc/src/lib.rs")).unwrap();
    assert!(source.contains(shown.trim()), "README and plugins/calc/src/lib.rs differ");
}
