//! Trusted projects. A cloned repository's `.brute/config.toml` could point brute at another
//! server (and so receive your API key), run commands, or widen the sandbox. Such settings
//! ([`RISKY_KEYS`]) apply only in directories the person trusted; harmless ones (the model,
//! limits, narrowing the tool list) apply everywhere.
//!
//! Trust lives in the data directory (`trusted-projects.json`), never in the project, so a
//! repository cannot trust itself. It is given to one directory (not the tree below it) and to
//! its `.brute/config.toml` as it was then: a config that changed since (a command in the
//! sandbox may write the project) is not trusted until the person says so again.

use std::path::{Path, PathBuf};

/// Project settings that can run code, widen the sandbox, redirect traffic or change what
/// brute reports and keeps: the settings list's lines marked `risky` (one place decides both
/// this list and what is taken out of an untrusted project's layer).
pub const RISKY_KEYS: &[&str] = super::FileLayer::RISKY;

const FILE: &str = "trusted-projects.json";

/// One trusted directory and the fingerprint of its project config when it was trusted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Entry {
    dir: PathBuf,
    config: String,
}

/// Whether a directory is trusted, and if not, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    Trusted,
    Untrusted,
    /// Trusted once, but its `.brute/config.toml` changed since.
    ConfigChanged,
}

fn store() -> Option<PathBuf> {
    crate::paths::data_dir().map(|d| d.join(FILE))
}

fn canonical(dir: &Path) -> PathBuf {
    dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
}

/// The project config as it is now: a hash of its bytes, or `absent`, and the hash of its
/// `.mcp.json` when it has one.
fn fingerprint(dir: &Path) -> String {
    let path = dir.join(".brute").join("config.toml");
    let config = match crate::files::read_bounded(&path, 1024 * 1024) {
        Ok(bytes) => format!("sha256:{}", crate::session::objects::hash(&bytes)),
        Err(_) => "absent".to_owned(),
    };
    // `.mcp.json` starts programs too: trust covers it as it was (a project without one keeps
    // the fingerprint it always had).
    match crate::files::read_bounded(&dir.join(crate::mcp::config::MCP_JSON), 1024 * 1024) {
        Ok(bytes) => format!("{config}+mcp:sha256:{}", crate::session::objects::hash(&bytes)),
        Err(_) => config,
    }
}

fn read(path: &Path) -> Vec<Entry> {
    crate::files::read_bounded(path, 16 * 1024 * 1024)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Whether `dir` is trusted with its project config as it is now.
pub fn check(dir: &Path) -> Trust {
    let Some(path) = store() else {
        return Trust::Untrusted;
    };
    let dir = canonical(dir);
    match read(&path).into_iter().find(|e| e.dir == dir) {
        Some(entry) if entry.config == fingerprint(&dir) => Trust::Trusted,
        Some(_) => Trust::ConfigChanged,
        None => Trust::Untrusted,
    }
}

/// Whether `dir` is trusted with its project config as it is now.
pub fn is_trusted(dir: &Path) -> bool {
    check(dir) == Trust::Trusted
}

/// Trusts (`true`) `dir` with its project config as it is now, or stops trusting it; returns
/// the canonical path.
pub fn set_trusted(dir: &Path, trusted: bool) -> std::io::Result<PathBuf> {
    let path = store().ok_or_else(|| std::io::Error::other("no data directory (set BRUTE_DATA_DIR)"))?;
    let dir = canonical(dir);
    let mut list = read(&path);
    list.retain(|t| t.dir != dir);
    if trusted {
        list.push(Entry {
            dir: dir.clone(),
            config: fingerprint(&dir),
        });
    }
    if let Some(parent) = path.parent() {
        crate::paths::private_dir(parent)?;
    }
    let json = serde_json::to_vec_pretty(&list).map_err(std::io::Error::other)?;
    crate::paths::replace_private(&path, &json)?;
    Ok(dir)
}
