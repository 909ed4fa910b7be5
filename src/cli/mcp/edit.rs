//! `brute mcp add` and `brute mcp remove`: edit the `[mcp_servers.NAME]` tables of the user's
//! config file as text, so everything else in the file (comments, order, other tables) stays
//! exactly as the person wrote it. The result is parsed again before it is written, and
//! written atomically.

use std::path::Path;

use crate::mcp::config::ServerSpec;

/// Why the file could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("cannot write {path}: {error}")]
    Write { path: String, error: std::io::Error },
    #[error("{0}")]
    Invalid(String),
}

/// A TOML basic string.
fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The `[mcp_servers.NAME]` table for `spec` (the fields `brute mcp add` sets).
pub fn table(name: &str, spec: &ServerSpec) -> String {
    let mut out = format!("[mcp_servers.{name}]\n");
    if let Some(command) = &spec.command {
        out.push_str(&format!("command = {}\n", quote(command)));
        let args: Vec<String> = spec.args.iter().map(|a| quote(a)).collect();
        out.push_str(&format!("args = [{}]\n", args.join(", ")));
    }
    if let Some(url) = &spec.url {
        out.push_str(&format!("url = {}\n", quote(url)));
    }
    if !spec.env.is_empty() {
        let env: Vec<String> = spec
            .env
            .iter()
            .map(|(k, v)| format!("{} = {}", quote(k), quote(v)))
            .collect();
        out.push_str(&format!("env = {{ {} }}\n", env.join(", ")));
    }
    if !spec.headers.is_empty() {
        let headers: Vec<String> = spec
            .headers
            .iter()
            .map(|(k, v)| format!("{} = {}", quote(k), quote(v)))
            .collect();
        out.push_str(&format!("headers = {{ {} }}\n", headers.join(", ")));
    }
    if let Some(var) = &spec.bearer_token_env_var {
        out.push_str(&format!("bearer_token_env_var = {}\n", quote(var)));
    }
    out
}

/// The servers a config text defines (to check an edit).
fn servers(text: &str) -> Result<std::collections::BTreeMap<String, ServerSpec>, String> {
    let layer: crate::config::FileLayer = toml::from_str(text).map_err(|e| e.to_string())?;
    Ok(layer.mcp_servers.unwrap_or_default())
}

fn read(path: &Path) -> Result<String, EditError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(error) => Err(EditError::Read {
            path: path.display().to_string(),
            error,
        }),
    }
}

fn write(path: &Path, text: &str) -> Result<(), EditError> {
    let fail = |error| EditError::Write {
        path: path.display().to_string(),
        error,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(fail)?;
    let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    std::io::Write::write_all(&mut temp, text.as_bytes()).map_err(fail)?;
    temp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

/// Adds server `name` to the config file at `path` (created if missing).
pub fn add(path: &Path, name: &str, spec: &ServerSpec) -> Result<(), EditError> {
    crate::mcp::config::check_name(name).map_err(EditError::Invalid)?;
    spec.transport().map_err(EditError::Invalid)?;
    let text = read(path)?;
    let before =
        servers(&text).map_err(|e| EditError::Invalid(format!("{} is not valid config: {e}", path.display())))?;
    if before.contains_key(name) {
        return Err(EditError::Invalid(format!(
            "an MCP server named `{name}` is already configured in {} (brute mcp remove {name} first)",
            path.display()
        )));
    }
    let mut new = text.clone();
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    if !new.is_empty() {
        new.push('\n');
    }
    new.push_str(&table(name, spec));
    // An inline `mcp_servers = {…}` or a `[mcp_servers]` table cannot take a new header.
    match servers(&new) {
        Ok(after) if after.get(name) == Some(spec) => write(path, &new),
        _ => Err(EditError::Invalid(format!(
            "cannot add `{name}` to {} as a [mcp_servers.{name}] table; edit the file by hand",
            path.display()
        ))),
    }
}

/// Removes server `name`'s `[mcp_servers.NAME]` table (up to the next table) from `path`.
pub fn remove(path: &Path, name: &str) -> Result<(), EditError> {
    let text = read(path)?;
    let before =
        servers(&text).map_err(|e| EditError::Invalid(format!("{} is not valid config: {e}", path.display())))?;
    if !before.contains_key(name) {
        return Err(EditError::Invalid(format!(
            "no MCP server named `{name}` in {}",
            path.display()
        )));
    }
    // A table or array-of-tables header ends ours (a line of a multi-line array that starts
    // with `[` would end it early; the check below then refuses to write).
    let header = |line: &str| line.trim_start().starts_with('[');
    let ours = |line: &str| {
        let compact: String = line
            .split('#')
            .next()
            .unwrap_or("")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        compact == format!("[mcp_servers.{name}]") || compact == format!("[mcp_servers.\"{name}\"]")
    };
    let mut kept = Vec::new();
    let mut skipping = false;
    for line in text.split_inclusive('\n') {
        if ours(line) {
            skipping = true;
            continue;
        }
        if skipping && header(line) {
            skipping = false;
        }
        if !skipping {
            kept.push(line);
        }
    }
    let new: String = kept.concat();
    match servers(&new) {
        Ok(after) if !after.contains_key(name) && after.len() + 1 == before.len() => write(path, &new),
        _ => Err(EditError::Invalid(format!(
            "cannot find a [mcp_servers.{name}] table in {} to remove; edit the file by hand",
            path.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_and_remove_keep_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let original = "# my settings\nmodel = \"m\"\n\n[mcp_servers.keep]\ncommand = \"k\"\n\n[permissions]\nallow = [\"read\"]\n";
        std::fs::write(&path, original).unwrap();
        let spec = ServerSpec {
            command: Some("npx".into()),
            args: vec!["-y".into(), "a \"quoted\" arg\\".into()],
            env: [("K".to_owned(), "v=1".to_owned())].into(),
            ..ServerSpec::default()
        };
        add(&path, "new-one", &spec).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(original), "{text}");
        assert_eq!(servers(&text).unwrap()["new-one"], spec);
        assert!(
            add(&path, "new-one", &spec)
                .unwrap_err()
                .to_string()
                .contains("already")
        );
        remove(&path, "keep").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("# my settings\nmodel = \"m\"\n\n[permissions]\nallow = [\"read\"]\n"),
            "{text}"
        );
        let left = servers(&text).unwrap();
        assert_eq!(left.keys().collect::<Vec<_>>(), ["new-one"]);
        remove(&path, "new-one").unwrap();
        assert!(servers(&std::fs::read_to_string(&path).unwrap()).unwrap().is_empty());
        assert!(
            remove(&path, "new-one")
                .unwrap_err()
                .to_string()
                .contains("no MCP server")
        );
    }

    #[test]
    fn an_inline_table_is_left_to_the_person() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "mcp_servers = { a = { command = \"x\" } }\n").unwrap();
        let spec = ServerSpec {
            url: Some("http://127.0.0.1:1/mcp".into()),
            ..ServerSpec::default()
        };
        assert!(add(&path, "b", &spec).unwrap_err().to_string().contains("by hand"));
        assert!(remove(&path, "a").unwrap_err().to_string().contains("by hand"));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "mcp_servers = { a = { command = \"x\" } }\n"
        );
    }
}
