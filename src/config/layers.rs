//! Reading the layers: the user's config file, the project's `.brute/config.toml` (its risky
//! settings only when the project is trusted), a trusted project's `.mcp.json`, then the
//! environment, then the flags. Each value keeps where it came from.

use std::path::{Path, PathBuf};

use super::choice::{Choice, allowed};
use super::settings::{FileLayer, Gathered, ModelConfig};
use super::{ConfigError, EnvLookup, Flags, Source, Sourced, Value, trust};
use crate::tool::command::CommandToolSpec;

/// Loads one config file; a missing file is an empty layer.
pub fn read_layer(path: &Path) -> Result<Option<FileLayer>, ConfigError> {
    // A repository's config could be a FIFO or a link to /dev/zero: read it bounded.
    // Refused, not decoded lossily: a replaced byte could change what a key or value says.
    let text = match crate::files::read_bounded(path, 1024 * 1024) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|e| ConfigError::NotUtf8 {
            path: path.to_path_buf(),
            offset: e.utf8_error().valid_up_to(),
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                message: e.to_string(),
            });
        }
    };
    toml::from_str(&text).map(Some).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

pub(super) fn set<T>(slot: &mut Option<Sourced<T>>, value: Option<T>, source: &Source) {
    if let Some(value) = value {
        *slot = Some(Sourced::new(value, source.clone()));
    }
}

pub(super) fn set_from_env<T: Value>(
    slot: &mut Option<Sourced<T>>,
    var: &str,
    env: EnvLookup<'_>,
) -> Result<(), ConfigError> {
    if let Some(text) = env(var) {
        let value = T::parse_env(&text).map_err(|message| ConfigError::Invalid {
            name: var.to_owned(),
            message: format!("`{text}` {message}"),
        })?;
        *slot = Some(Sourced::new(value, Source::Env(var.to_owned())));
    }
    Ok(())
}

pub(super) fn check<T>(
    name: &str,
    value: &T,
    rule: impl Fn(&T) -> Result<(), &'static str>,
) -> Result<(), ConfigError> {
    rule(value).map_err(|message| ConfigError::Invalid {
        name: name.to_owned(),
        message: message.to_owned(),
    })
}

/// A flag's choice (clap checks the names already; a caller building [`Flags`] by hand is
/// told the same as a file would be).
fn choice_flag<T: Choice>(flag: &str, text: Option<&str>) -> Result<Option<T>, ConfigError> {
    text.map(|text| {
        T::from_name(text).ok_or_else(|| ConfigError::Invalid {
            name: flag.to_owned(),
            message: format!("`{text}` must be {}", allowed::<T>()),
        })
    })
    .transpose()
}

/// A config file brute looked for.
#[derive(Debug, Clone)]
pub(super) struct Searched {
    /// `user config` or `project config`.
    pub(super) layer: &'static str,
    pub(super) path: PathBuf,
    pub(super) found: bool,
}

/// Everything the layers set, before defaults and provider resolution.
#[derive(Debug, Clone, Default)]
pub(super) struct Layers {
    pub(super) gathered: Gathered,
    pub(super) command_tools: Vec<Sourced<CommandToolSpec>>,
    /// Each config file looked for, lowest layer first.
    pub(super) searched: Vec<Searched>,
    /// Risky project settings dropped because the project is not trusted.
    pub(super) untrusted_ignored: Vec<String>,
    /// The project was trusted, but its config changed since.
    pub(super) config_changed: bool,
    pub(super) yolo: bool,
    pub(super) plan: bool,
    pub(super) add_dirs: Vec<PathBuf>,
    pub(super) images: Vec<PathBuf>,
    pub(super) append_system_prompt: Option<String>,
    pub(super) rules: crate::permission::Rules,
    pub(super) models: std::collections::BTreeMap<String, Sourced<ModelConfig>>,
    pub(super) hooks: Vec<Sourced<crate::hooks::Hook>>,
    pub(super) mcp_servers: Vec<crate::mcp::config::Server>,
    pub(super) mcp_notices: Vec<String>,
}

impl Layers {
    /// An untrusted project may only narrow the tool list: its `deny_tools` adds to the user's,
    /// its `allow_tools` keeps only tools the user's allows too.
    fn narrow_only(&self, layer: &mut FileLayer) {
        if let (Some(deny), Some(user)) = (layer.deny_tools.as_mut(), self.gathered.deny_tools.as_ref()) {
            for name in &user.value {
                if !deny.contains(name) {
                    deny.push(name.clone());
                }
            }
        }
        if let (Some(allow), Some(user)) = (layer.allow_tools.as_mut(), self.gathered.allow_tools.as_ref()) {
            allow.retain(|name| user.value.contains(name));
        }
    }

    fn apply_file(&mut self, mut layer: FileLayer, path: &Path) -> Result<(), ConfigError> {
        let source = Source::File(path.to_path_buf());
        // A script path in a file is relative to that file's directory.
        if let (Some(script), Some(dir)) = (layer.script.as_mut(), path.parent()) {
            *script = dir.join(&*script);
        }
        for (name, model) in layer.models.take().unwrap_or_default() {
            self.models.insert(name, Sourced::new(model, source.clone()));
        }
        if let Some(permissions) = layer.permissions.take() {
            let rules = crate::permission::Rules::from_config(
                &permissions,
                crate::permission::Source::File(path.to_path_buf()),
            )
            .map_err(|e| ConfigError::Invalid {
                name: "[permissions]".to_owned(),
                message: e.to_string(),
            })?;
            self.rules.append(rules);
        }
        if let Some(hooks) = layer.hooks.take() {
            let hooks = hooks.compile().map_err(|message| ConfigError::Invalid {
                name: format!("[hooks] in {}", path.display()),
                message,
            })?;
            self.hooks
                .extend(hooks.into_iter().map(|hook| Sourced::new(hook, source.clone())));
        }
        if let Some(table) = layer.mcp_servers.take() {
            let servers = crate::mcp::config::from_table(table, path).map_err(|message| ConfigError::Invalid {
                name: format!("[mcp_servers] in {}", path.display()),
                message,
            })?;
            crate::mcp::config::merge(&mut self.mcp_servers, servers);
        }
        for tool in layer.tools.take().unwrap_or_default() {
            // A config tool named like a built-in would silently replace it (a cloned
            // repository's `read` that runs anything): refuse at load, naming both.
            if crate::tool::BUILTIN_NAMES.contains(&tool.name.as_str()) {
                return Err(ConfigError::Invalid {
                    name: format!("[[tools]] `{}` in {}", tool.name, path.display()),
                    message: format!(
                        "it has the name of the built-in tool `{}`, which config tools cannot replace; choose another name",
                        tool.name
                    ),
                });
            }
            self.command_tools.retain(|t| t.value.name != tool.name);
            self.command_tools.push(Sourced::new(tool, source.clone()));
        }
        self.gathered.merge_file(layer, &source);
        Ok(())
    }

    fn apply_flags(&mut self, flags: &Flags) -> Result<(), ConfigError> {
        let g = &mut self.gathered;
        let flag = |name: &str| Source::Flag(name.to_owned());
        set(&mut g.provider, flags.provider.clone(), &flag("--provider"));
        set(&mut g.model, flags.model.clone(), &flag("--model"));
        set(&mut g.base_url, flags.base_url.clone(), &flag("--base-url"));
        set(&mut g.max_turns, flags.max_turns, &flag("--max-turns"));
        set(&mut g.script, flags.script.clone(), &flag("--script"));
        if flags.no_stream {
            g.stream = Some(Sourced::new(false, flag("--no-stream")));
        }
        if flags.no_tools {
            g.allow_tools = Some(Sourced::new(Vec::new(), flag("--no-tools")));
        } else {
            set(&mut g.allow_tools, flags.tools.clone(), &flag("--tools"));
        }
        set(
            &mut g.sandbox,
            choice_flag("--sandbox", flags.sandbox.as_deref())?,
            &flag("--sandbox"),
        );
        set(
            &mut g.reasoning_effort,
            choice_flag("--effort", flags.effort.as_deref())?.map(Some),
            &flag("--effort"),
        );
        if flags.yolo {
            g.sandbox = Some(Sourced::new(crate::sandbox::Mode::FullAccess, flag("--yolo")));
        }
        self.yolo = flags.yolo;
        self.plan = flags.plan;
        self.add_dirs = flags.add_dirs.clone();
        self.images = flags.images.clone();
        // `--system-prompt ""` (what Claude Code's SDK passes when it sets none) keeps brute's.
        set(
            &mut g.system_prompt,
            flags.system_prompt.clone().filter(|p| !p.is_empty()).map(Some),
            &flag("--system-prompt"),
        );
        self.append_system_prompt = flags.append_system_prompt.clone().filter(|p| !p.is_empty());
        let rules = crate::permission::Rules::from_config(&flags.permissions, crate::permission::Source::CommandLine)
            .map_err(|e| ConfigError::Invalid {
            name: "--allowedTools / --disallowedTools".to_owned(),
            message: e.to_string(),
        })?;
        self.rules.append(rules);
        Ok(())
    }
}

/// Reads every layer for a project root: config files, then the environment, then flags.
pub(super) fn gather(
    root: &Path,
    flags: &Flags,
    env: EnvLookup<'_>,
    user_config: Option<&Path>,
) -> Result<Layers, ConfigError> {
    let mut layers = Layers::default();
    let project = root.join(".brute").join("config.toml");
    let files = user_config
        .map(|path| ("user config", path))
        .into_iter()
        .chain([("project config", project.as_path())]);
    for (name, path) in files {
        let layer = read_layer(path)?;
        layers.searched.push(Searched {
            layer: name,
            path: path.to_path_buf(),
            found: layer.is_some(),
        });
        if let Some(mut layer) = layer {
            if name == "project config" {
                match trust::check(root) {
                    trust::Trust::Trusted => {}
                    trust::Trust::Untrusted => layers.untrusted_ignored = layer.take_risky(),
                    trust::Trust::ConfigChanged => {
                        layers.untrusted_ignored = layer.take_risky();
                        layers.config_changed = true;
                    }
                }
                if !layers.untrusted_ignored.is_empty() || trust::check(root) != trust::Trust::Trusted {
                    layers.narrow_only(&mut layer);
                }
            }
            layers.apply_file(layer, path)?;
        }
    }
    // A project's `.mcp.json` starts programs as the person: only in a trusted project.
    let mcp_json = root.join(crate::mcp::config::MCP_JSON);
    // (No file, no further work at start-up.)
    if std::fs::symlink_metadata(&mcp_json).is_ok() {
        let why = match trust::check(root) {
            trust::Trust::Trusted => None,
            trust::Trust::Untrusted => Some("the project is not trusted"),
            trust::Trust::ConfigChanged => Some("the project's config changed since you trusted it"),
        };
        match why {
            None => {
                let (servers, notices) = crate::mcp::config::project_servers(root);
                crate::mcp::config::merge(&mut layers.mcp_servers, servers);
                layers.mcp_notices.extend(notices);
            }
            Some(why) => layers.mcp_notices.push(format!(
                "ignored the MCP servers in {}: {why} (brute trust trusts it as it is now)",
                mcp_json.display()
            )),
        }
    }
    layers.gathered.merge_env(env)?;
    layers.apply_flags(flags)?;
    Ok(layers)
}
