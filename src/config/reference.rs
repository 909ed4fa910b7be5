//! The configuration reference (`docs/configuration.md`), generated from the settings list so
//! that the page cannot drift from what brute reads: every key's type, default, variable,
//! whether only a trusted project may set it, and its doc comment.
//! `tests/suite/config_reference.rs` fails when the page differs from [`reference_markdown`].

use std::fmt::Write as _;

use super::settings::entries;
use crate::paths::CONFIG_DIR_VAR;

/// Which group of the settings list a key belongs to (see `settings!`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Group {
    /// A table documented on its own page (`[[tools]]`, `[permissions]`, ...).
    FileOnly,
    /// Layered like every key, resolved by hand (the provider and what depends on it).
    Layered,
    /// A plain `key = value` with a default.
    Plain,
}

/// One file key as the reference describes it.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) key: &'static str,
    pub(super) group: Group,
    /// The value's type in words, or how a file writes a table (`[[tools]]`).
    pub(super) kind: String,
    /// The default as `brute config` shows it (`None` for tables).
    pub(super) default: Option<String>,
    /// The brute variable that sets it.
    pub(super) env: Option<&'static str>,
    /// Why only a trusted project's config may set it; `None` for a harmless key.
    pub(super) risky: Option<&'static str>,
    /// Its doc comment, one literal per line (each with rustdoc's leading space).
    pub(super) doc: &'static [&'static str],
    /// The page documenting a table in detail (relative to the repository root).
    pub(super) see: Option<&'static str>,
}

impl Entry {
    /// The doc comment as Markdown text.
    fn text(&self) -> String {
        let lines: Vec<&str> = self
            .doc
            .iter()
            .map(|line| line.strip_prefix(' ').unwrap_or(line).trim_end())
            .collect();
        lines.join("\n")
    }
}

/// A table cell: no line breaks, and a `|` that does not end the cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Markdown code, with a fence long enough for the backticks inside.
fn code(text: &str) -> String {
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

/// The configuration reference as Markdown: how the layers stack and what trust changes, a
/// summary table, then each key with its doc comment, the tables with where their details
/// are, and the environment variables configuration reads.
pub fn reference_markdown() -> String {
    let entries = entries();
    let mut out = String::new();
    out.push_str("# Configuration reference\n\n");
    out.push_str(
        "<!-- Generated from the settings list in src/config/settings.rs by \
         brute::config::reference_markdown(); do not edit by hand. After changing a setting, \
         regenerate with: BRUTE_BLESS=1 cargo test --test suite config_reference -->\n\n",
    );
    out.push_str(&format!(
        "brute reads its settings in layers, each overriding what the one before set:\n\n\
         1. built-in defaults;\n\
         2. the user config: `config.toml` in brute's config directory (`~/.config/brute/` on \
         Linux; `{CONFIG_DIR_VAR}` names another);\n\
         3. the project config: `.brute/config.toml` in the project root;\n\
         4. environment variables;\n\
         5. command-line flags (`brute --help`).\n\n\
         `brute config` shows every effective value and the layer it came from (API keys are \
         never shown). A config file that is not valid TOML, holds an unknown key or a value \
         of the wrong type is refused with its path; a setting that takes one of a few names \
         says which.\n\n"
    ));
    out.push_str(
        "**Trusted projects only.** A project's `.brute/config.toml` comes with the repository, \
         so the settings marked *trusted projects only* below (those that could run code, \
         widen the sandbox, send your key or your conversation elsewhere, or change what \
         brute reports and keeps) apply from a project's config only in a directory you \
         trusted with `brute trust`, and only as the file was then. Elsewhere they are \
         ignored, with a notice naming them. Every other setting applies everywhere, and your \
         own config may set them all. An untrusted project may narrow the tool list \
         (`deny_tools`, `allow_tools`) but never widen yours. See `docs/safety.md`.\n\n",
    );

    out.push_str("## Summary\n\n");
    out.push_str("| key | type | default | environment | trusted projects only |\n");
    out.push_str("|---|---|---|---|---|\n");
    let keyed = entries.iter().filter(|e| e.group != Group::FileOnly);
    for entry in keyed.clone() {
        let _ = writeln!(
            out,
            "| [`{key}`](#{key}) | {kind} | {default} | {env} | {risky} |",
            key = entry.key,
            kind = cell(&entry.kind),
            default = cell(&entry.default_text()),
            env = entry.env.map_or_else(|| "—".to_owned(), |var| format!("`{var}`")),
            risky = if entry.risky.is_some() { "yes" } else { "" },
        );
    }
    for entry in entries.iter().filter(|e| e.group == Group::FileOnly) {
        let _ = writeln!(
            out,
            "| [`{key}`](#{key}) | {kind} | — | — | {risky} |",
            key = entry.key,
            kind = cell(&code(&entry.kind)),
            risky = if entry.risky.is_some() { "yes" } else { "" },
        );
    }

    out.push_str("\n## Settings\n");
    for entry in keyed {
        let _ = write!(out, "\n### `{}`\n\n{}\n\n", entry.key, entry.text());
        let _ = writeln!(out, "- type: {}", entry.kind);
        let _ = writeln!(out, "- default: {}", entry.default_text());
        if let Some(var) = entry.env {
            let _ = writeln!(out, "- environment: `{var}`");
        }
        if let Some(why) = entry.risky {
            let _ = writeln!(out, "- **trusted projects only**: {why}");
        }
    }

    out.push_str("\n## Tables\n\nThese keys hold tables; each page named documents its table in full.\n");
    for entry in entries.iter().filter(|e| e.group == Group::FileOnly) {
        let _ = write!(out, "\n### `{}`\n\n{}\n\n", entry.key, entry.text());
        if let Some(page) = entry.see {
            let _ = writeln!(out, "- details: [{page}]({})", page.trim_start_matches("docs/"));
        }
        if let Some(why) = entry.risky {
            let _ = writeln!(out, "- **trusted projects only**: {why}");
        }
    }

    out.push_str(
        "\n## Environment variables\n\nEvery variable configuration reads, and what reads it \
         (`brute config` says which are set, never their values):\n\n",
    );
    out.push_str("| variable | read for |\n|---|---|\n");
    for (var, users) in super::env_vars() {
        let _ = writeln!(out, "| `{var}` | {} |", cell(&users.join(", ")));
    }
    out
}

impl Entry {
    /// The default as the reference prints it: a value as code; what resolving picks (a
    /// layered key) and `brute config`'s words for "none" (`(not set)`) as text.
    fn default_text(&self) -> String {
        match &self.default {
            None => "—".to_owned(),
            Some(text) if self.group == Group::Layered || text.starts_with('(') => text.clone(),
            Some(value) => code(value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FileLayer;

    #[test]
    fn every_file_key_is_in_the_reference_with_its_doc() {
        let text = reference_markdown();
        let entries = entries();
        let mut keys: Vec<&str> = entries.iter().map(|e| e.key).collect();
        let mut file_keys = FileLayer::KEYS.to_vec();
        keys.sort_unstable();
        file_keys.sort_unstable();
        assert_eq!(keys, file_keys);
        for entry in &entries {
            assert!(
                !entry.doc.is_empty(),
                "`{}` needs a doc comment for the reference",
                entry.key
            );
            assert!(text.contains(&format!("\n### `{}`\n", entry.key)), "{}", entry.key);
            assert!(text.contains(&entry.text()), "{}", entry.key);
        }
        for table in entries.iter().filter(|e| e.group == Group::FileOnly) {
            assert!(table.see.is_some_and(|page| page.starts_with("docs/")), "{}", table.key);
        }
    }

    #[test]
    fn the_reference_marks_exactly_the_risky_keys() {
        let marked: Vec<&str> = entries().iter().filter(|e| e.risky.is_some()).map(|e| e.key).collect();
        let mut risky = FileLayer::RISKY.to_vec();
        let mut marked_sorted = marked.clone();
        risky.sort_unstable();
        marked_sorted.sort_unstable();
        assert_eq!(marked_sorted, risky);
        let text = reference_markdown();
        let section = |key: &str| {
            let start = text.find(&format!("\n### `{key}`\n")).unwrap_or_default();
            let rest = &text[start + 1..];
            rest[..rest[4..].find("\n### ").map_or(rest.len(), |end| end + 4)].to_owned()
        };
        for entry in entries() {
            assert_eq!(
                section(entry.key).contains("**trusted projects only**"),
                entry.risky.is_some(),
                "{}",
                entry.key
            );
        }
    }

    #[test]
    fn cells_and_code_survive_markdown() {
        assert_eq!(cell("a | b\nc"), "a \\| b c");
        assert_eq!(code("x"), "`x`");
        assert_eq!(code("one of `a`"), "`` one of `a` ``");
        let entry = |group, default: &str| Entry {
            key: "k",
            group,
            kind: String::new(),
            default: Some(default.to_owned()),
            env: None,
            risky: None,
            doc: &[],
            see: None,
        };
        assert_eq!(entry(Group::Plain, "16384").default_text(), "`16384`");
        assert_eq!(entry(Group::Plain, "(not set)").default_text(), "(not set)");
        assert_eq!(entry(Group::Plain, "read [\".\"]").default_text(), "`read [\".\"]`");
        assert_eq!(
            entry(Group::Layered, "the provider's default model").default_text(),
            "the provider's default model"
        );
    }
}
