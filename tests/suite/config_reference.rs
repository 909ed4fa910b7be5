//! `docs/configuration.md` is generated from the settings list (`brute::config::
//! reference_markdown`): this test fails when the page and the list disagree, so a new or
//! changed setting cannot ship with a stale reference. `BRUTE_BLESS=1` rewrites the page.

use std::path::PathBuf;

const REGENERATE: &str = "BRUTE_BLESS=1 cargo test --test config_reference";

fn page() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join("configuration.md")
}

/// The first line where two texts differ, numbered from 1, with both versions of it.
fn first_difference(on_disk: &str, generated: &str) -> String {
    let mut disk = on_disk.lines();
    let mut wanted = generated.lines();
    for number in 1.. {
        match (disk.next(), wanted.next()) {
            (None, None) => break,
            (a, b) if a == b => {}
            (a, b) => {
                return format!(
                    "line {number}:\n  docs/configuration.md: {}\n  generated:             {}",
                    a.unwrap_or("(end of file)"),
                    b.unwrap_or("(end of text)")
                );
            }
        }
    }
    "the line ends differ".to_owned()
}

#[test]
fn the_configuration_reference_is_generated_from_the_settings_list() {
    let generated = brute::config::reference_markdown();
    let path = page();
    if std::env::var_os("BRUTE_BLESS").is_some_and(|v| !v.is_empty()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "BRUTE_BLESS under CI would hide a stale page; regenerate locally with {REGENERATE}"
        );
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}; generate it with {REGENERATE}", path.display()));
    assert!(
        on_disk == generated,
        "docs/configuration.md differs from the settings list at {}\nregenerate it with: {REGENERATE}",
        first_difference(&on_disk, &generated)
    );
}

/// The page covers what the settings list declares: a few facts checked by hand so that
/// a generator that wrote nothing useful could not pass the comparison above.
#[test]
fn the_reference_names_every_key_the_layers_and_trust() {
    let text = brute::config::reference_markdown();
    for key in brute::config::FileLayer::KEYS {
        assert!(text.contains(&format!("### `{key}`")), "{key}");
    }
    for risky in brute::config::trust::RISKY_KEYS {
        assert!(text.contains(&format!("| [`{risky}`](#{risky}) |")), "{risky}");
    }
    for layer in [
        ".brute/config.toml",
        "BRUTE_CONFIG_DIR",
        "environment variables",
        "flags",
    ] {
        assert!(text.contains(layer), "{layer}");
    }
    assert!(text.contains("- **trusted projects only**: widens what commands may do"));
    assert!(text.contains("one of `read-only`, `workspace-write`, `full-access`"));
    assert!(text.contains("[docs/extensions.md](extensions.md)"));
    assert!(text.contains("[docs/safety.md](safety.md)"));
    assert!(text.contains("| `BRUTE_MAX_TURNS` | max_turns |"));
}
