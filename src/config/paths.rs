//! Where brute keeps its files: the user config directory and the data directory, from the
//! platform conventions (`directories`), overridable with `BRUTE_CONFIG_DIR` and
//! `BRUTE_DATA_DIR`.

use std::path::PathBuf;

fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "brute")
}

/// The user config directory (holds `config.toml` and `skills/`).
pub fn config_dir() -> Option<PathBuf> {
    std::env::var_os("BRUTE_CONFIG_DIR")
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
