//! Trusted projects. A cloned repository's `.brute/config.toml` could point brute at another
//! server (and so receive your API key), run commands, or widen the sandbox. Such settings
//! ([`RISKY_KEYS`]) apply only in directories the person trusted; harmless ones (the model,
//! limits, narrowing the tool list) apply everywhere.
//!
//! Trust lives in the data directory (`trusted-projects.json`, a list of canonical paths), never
//! in the project, so a repository cannot trust itself.

use std::path::{Path, PathBuf};

/// Project settings that can run code, widen the sandbox or redirect traffic.
pub const RISKY_KEYS: &[&str] = &[
    "provider",
    "base_url",
    "api_key",
    "tools",
    "sandbox",
    "writable_roots",
    "system_prompt",
    "permissions",
    "mcp_servers",
    "hooks",
];

const FILE: &str = "trusted-projects.json";

fn store() -> Option<PathBuf> {
    super::paths::data_dir().map(|d| d.join(FILE))
}

fn canonical(dir: &Path) -> PathBuf {
    dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
}

fn read(path: &Path) -> Vec<PathBuf> {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Whether `dir` (or a directory above it) was trusted.
pub fn is_trusted(dir: &Path) -> bool {
    let Some(path) = store() else { return false };
    let dir = canonical(dir);
    read(&path).iter().any(|t| dir.starts_with(t))
}

/// Trusts (`true`) or stops trusting `dir`; returns the canonical path.
pub fn set_trusted(dir: &Path, trusted: bool) -> std::io::Result<PathBuf> {
    let path = store().ok_or_else(|| std::io::Error::other("no data directory (set BRUTE_DATA_DIR)"))?;
    let dir = canonical(dir);
    let mut list = read(&path);
    list.retain(|t| t != &dir);
    if trusted {
        list.push(dir.clone());
    }
    if let Some(parent) = path.parent() {
        super::paths::private_dir(parent)?;
    }
    let json = serde_json::to_vec_pretty(&list).map_err(std::io::Error::other)?;
    let temp = path.with_extension("json.tmp");
    std::io::Write::write_all(&mut super::paths::private_file(&temp)?, &json)?;
    std::fs::rename(&temp, &path)?;
    Ok(dir)
}
