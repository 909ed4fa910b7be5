//! Where brute keeps its files: the user config directory and the data directory, from the
//! platform conventions (`directories`), overridable with `BRUTE_CONFIG_DIR` and
//! `BRUTE_DATA_DIR`.

use std::path::PathBuf;

/// Overrides the user config directory.
pub const CONFIG_DIR_VAR: &str = "BRUTE_CONFIG_DIR";

fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "brute")
}

/// The user config directory (holds `config.toml` and `skills/`).
pub fn config_dir() -> Option<PathBuf> {
    std::env::var_os(CONFIG_DIR_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| project_dirs().map(|d| d.config_dir().to_path_buf()))
}

/// The data directory (holds `tool-output/` and, later, sessions).
pub fn data_dir() -> Option<PathBuf> {
    std::env::var_os("BRUTE_DATA_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| project_dirs().map(|d| d.data_dir().to_path_buf()))
}

/// Where images given without a file (the clipboard's, an editor's prompt block) are kept
/// under the data directory `data`, for the prompt that attaches them.
pub fn pasted_dir(data: &std::path::Path) -> PathBuf {
    data.join("pasted")
}

/// Creates `dir` (and its parents) and makes it private to the user (0700): everything brute
/// keeps there — sessions, file contents, tool output, logs — is then out of other users'
/// reach whatever the files' own modes.
pub fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mode = std::fs::metadata(dir)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & 0o700))?;
    }
    Ok(())
}

/// Opens `path` for writing (created 0600, truncated), for brute's own files. A symlink at
/// `path` is refused (`O_NOFOLLOW`): a planted link cannot make brute write elsewhere.
pub fn private_file(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Replaces `path` with `bytes` atomically (a fresh temp file beside it, then rename), for
/// brute's own small state files.
pub fn replace_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let mut temp = tempfile::Builder::new().prefix(".brute-").tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The data directory, created and made private (0700) where possible; `None` without one.
/// A directory that cannot be created is still returned: what uses it reports the error.
pub fn private_data_dir() -> Option<PathBuf> {
    let dir = data_dir()?;
    if let Err(e) = private_dir(&dir) {
        tracing::debug!("cannot make {} private: {e}", dir.display());
    }
    Some(dir)
}
