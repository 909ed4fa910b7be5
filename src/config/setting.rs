//! The machinery behind the settings list in `config/settings.rs`: how a value type is shown,
//! spelled in the environment, read from a file and named in the reference ([`Value`]), and
//! the `settings!` macro that turns one line per setting into the file layer, the merge, the
//! settings struct, the `brute config` lines, the trust stripping and the configuration
//! reference, so that a new setting cannot be half-added.

use std::path::PathBuf;

/// A type a setting can have: how `brute config` shows it, how an environment variable
/// spells it, how a config file holds it and how the reference names it.
pub trait Value: Sized {
    /// The value as `brute config` prints it.
    fn show(&self) -> String;
    /// Parses an environment variable's text; the error completes "`text` ...".
    fn parse_env(text: &str) -> Result<Self, String>;
    /// Reads the value from a config file: as serde reads it, unless the type spells its
    /// values its own way (a [`super::Choice`] reads a name and says which names it takes).
    fn from_file<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>
    where
        Self: serde::Deserialize<'de>,
    {
        Self::deserialize(deserializer)
    }
    /// What the configuration reference calls the type; a value that is none of the plain
    /// kinds is a TOML table.
    fn kind() -> String {
        "table".to_owned()
    }
}

/// A setting's key in a config file, read with [`Value::from_file`] (the `deserialize_with`
/// of every layered and plain `FileLayer` field).
pub(super) fn file_value<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Value + serde::Deserialize<'de>,
{
    T::from_file(deserializer).map(Some)
}

macro_rules! whole_numbers {
    ($($ty:ty),*) => {$(
        impl Value for $ty {
            fn show(&self) -> String {
                self.to_string()
            }
            fn parse_env(text: &str) -> Result<Self, String> {
                text.trim().parse().map_err(|_| "is not a positive whole number".to_owned())
            }
            fn kind() -> String {
                "whole number".to_owned()
            }
        }
    )*};
}

whole_numbers!(u32, u64, usize);

impl Value for f64 {
    fn show(&self) -> String {
        self.to_string()
    }
    fn parse_env(text: &str) -> Result<Self, String> {
        text.trim().parse().map_err(|_| "is not a number".to_owned())
    }
    fn kind() -> String {
        "number".to_owned()
    }
}

impl Value for bool {
    fn show(&self) -> String {
        self.to_string()
    }
    fn parse_env(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err("is not true or false".to_owned()),
        }
    }
    fn kind() -> String {
        "`true` or `false`".to_owned()
    }
}

impl Value for String {
    fn show(&self) -> String {
        self.clone()
    }
    fn parse_env(text: &str) -> Result<Self, String> {
        Ok(text.to_owned())
    }
    fn kind() -> String {
        "string".to_owned()
    }
}

impl Value for PathBuf {
    fn show(&self) -> String {
        self.display().to_string()
    }
    fn parse_env(text: &str) -> Result<Self, String> {
        Ok(PathBuf::from(text))
    }
    fn kind() -> String {
        "path".to_owned()
    }
}

/// A list: `["a", "b"]` in `brute config`, `a,b` in the environment.
impl Value for Vec<String> {
    fn show(&self) -> String {
        format!("{self:?}")
    }
    fn parse_env(text: &str) -> Result<Self, String> {
        Ok(text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect())
    }
    fn kind() -> String {
        "list of strings".to_owned()
    }
}

/// An optional value: unset shows as `(not set)`; a variable or a file that sets it sets it,
/// read as `T` reads it.
impl<T: Value + serde::de::DeserializeOwned> Value for Option<T> {
    fn show(&self) -> String {
        self.as_ref().map_or_else(|| "(not set)".to_owned(), T::show)
    }
    fn parse_env(text: &str) -> Result<Self, String> {
        T::parse_env(text).map(Some)
    }
    fn from_file<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>
    where
        Self: serde::Deserialize<'de>,
    {
        T::from_file(deserializer).map(Some)
    }
    fn kind() -> String {
        T::kind()
    }
}

/// Declares every config key once. Four groups, in this order:
///
/// - `file_only { key: Type, form = "[table]", see = "docs/page.md", risky = "why"?; }`:
///   keys only files hold, taken out of a layer by hand before `Gathered::merge_file` (e.g.
///   `[[tools]]`, which accumulates instead of overriding); `form` is how a file writes it
///   and `see` where it is documented in detail;
/// - `layered { key: Type, env = "VAR"?, default = "text", risky = "why"?; }`: layered like
///   every key (files, then the variable, then flags by hand) but resolved by hand into the
///   fields of `resolved`; `default` says in words what resolving picks when no layer sets it;
/// - `resolved { field: Type, }`: the `Settings` fields `resolve` works out by hand;
/// - `plain { key: Type = default, env = "VAR"?, check = fn?, show = fn?, risky = "why"?; }`:
///   everything else. One line is the whole setting: a `FileLayer` key, an optional
///   variable, a `Settings` field with its source, a default, an optional check
///   (`fn(&T) -> Result<(), &str>`) and a `brute config` line (shown with `Value::show`
///   unless `show` gives a `fn(&T) -> String`).
///
/// `risky = "why"` marks a key an untrusted project may not set (it could run code, widen the
/// sandbox, redirect traffic or change what brute keeps): `FileLayer::RISKY` lists these keys
/// and `FileLayer::take_risky` takes them out of an untrusted project's layer, both from the
/// marks. Every key's doc comment is its text in the configuration reference
/// (`Entry`, `docs/configuration.md`).
///
/// The generated items name `Deserialize`, `Sourced`, `Source`, `ConfigError`, `EnvLookup`,
/// `Entry`, `Group`, `file_value`, `set`, `set_from_env` and `check` from the module that
/// invokes it; what the rest of `config` uses is `pub(super)`.
macro_rules! settings {
    (@show $value:expr) => { $crate::config::Value::show($value) };
    (@show $value:expr, $show:expr) => { ($show)($value) };
    (@opt) => { None };
    (@opt $value:expr) => { Some($value) };
    // A risky key's name (the reason only marks it).
    (@risky $key:ident, $why:literal) => { stringify!($key) };
    // Takes a risky key out of `layer`, naming it in `ignored` when it was set.
    (@take $layer:ident, $ignored:ident, $key:ident, $why:literal) => {
        if $layer.$key.take().is_some() {
            $ignored.push(stringify!($key).to_owned());
        }
    };
    (
        file_only {
            $(
                $(#[doc = $fdoc:literal])*
                $fkey:ident : $fty:ty, form = $fform:literal, see = $fsee:literal
                $(, risky = $frisky:literal)? ;
            )*
        }
        layered {
            $(
                $(#[doc = $ldoc:literal])*
                $lkey:ident : $lty:ty $(, env = $lenv:expr)?, default = $ldefault:literal
                $(, risky = $lrisky:literal)? ;
            )*
        }
        resolved { $( $(#[$rdoc:meta])* $rkey:ident : $rty:ty, )* }
        plain {
            $(
                $(#[doc = $pdoc:literal])*
                $pkey:ident : $pty:ty = $pdefault:expr
                $(, env = $penv:expr)? $(, check = $pcheck:expr)? $(, show = $pshow:expr)?
                $(, risky = $prisky:literal)? ;
            )*
        }
    ) => {
        /// One config file's contents. Every key is optional: a layer only overrides what it sets.
        #[derive(Debug, Clone, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct FileLayer {
            $( $(#[doc = $fdoc])* pub $fkey: Option<$fty>, )*
            $(
                $(#[doc = $ldoc])*
                #[serde(default, deserialize_with = "file_value")]
                pub $lkey: Option<$lty>,
            )*
            $(
                $(#[doc = $pdoc])*
                #[serde(default, deserialize_with = "file_value")]
                pub $pkey: Option<$pty>,
            )*
        }

        impl FileLayer {
            /// Every key a config file may hold.
            pub const KEYS: &'static [&'static str] =
                &[$(stringify!($fkey),)* $(stringify!($lkey),)* $(stringify!($pkey),)*];

            /// The keys only a trusted project's config may set (the lines marked `risky`):
            /// the layered ones, then the file-only ones, then the plain ones.
            pub const RISKY: &'static [&'static str] = &[
                $($( settings!(@risky $lkey, $lrisky), )?)*
                $($( settings!(@risky $fkey, $frisky), )?)*
                $($( settings!(@risky $pkey, $prisky), )?)*
            ];

            /// Takes the [`Self::RISKY`] keys out of this layer (an untrusted project's) and
            /// names the ones it held, in the order of `RISKY`.
            pub(super) fn take_risky(&mut self) -> Vec<String> {
                let layer = self;
                let mut ignored = Vec::new();
                $($( settings!(@take layer, ignored, $lkey, $lrisky); )?)*
                $($( settings!(@take layer, ignored, $fkey, $frisky); )?)*
                $($( settings!(@take layer, ignored, $pkey, $prisky); )?)*
                ignored
            }
        }

        /// Every file key as the configuration reference describes it, in the list's order.
        pub(super) fn entries() -> Vec<Entry> {
            vec![
                $( Entry {
                    key: stringify!($fkey),
                    group: Group::FileOnly,
                    kind: $fform.to_owned(),
                    default: None,
                    env: None,
                    risky: settings!(@opt $($frisky)?),
                    doc: &[$($fdoc),*],
                    see: Some($fsee),
                }, )*
                $( Entry {
                    key: stringify!($lkey),
                    group: Group::Layered,
                    kind: <$lty as $crate::config::Value>::kind(),
                    default: Some($ldefault.to_owned()),
                    env: settings!(@opt $($lenv)?),
                    risky: settings!(@opt $($lrisky)?),
                    doc: &[$($ldoc),*],
                    see: None,
                }, )*
                $( Entry {
                    key: stringify!($pkey),
                    group: Group::Plain,
                    kind: <$pty as $crate::config::Value>::kind(),
                    default: Some({
                        let value: $pty = $pdefault;
                        settings!(@show &value $(, $pshow)?)
                    }),
                    env: settings!(@opt $($penv)?),
                    risky: settings!(@opt $($prisky)?),
                    doc: &[$($pdoc),*],
                    see: None,
                }, )*
            ]
        }

        /// The layers' values so far, before defaults and provider resolution.
        #[derive(Debug, Clone, Default)]
        pub(super) struct Gathered {
            $( pub(super) $lkey: Option<Sourced<$lty>>, )*
            $( pub(super) $pkey: Option<Sourced<$pty>>, )*
        }

        impl Gathered {
            /// The brute variables the environment layer reads, each with its key.
            pub(super) const ENV_VARS: &'static [(&'static str, &'static str)] =
                &[$($(($lenv, stringify!($lkey)),)?)* $($(($penv, stringify!($pkey)),)?)*];

            /// Where each key set so far came from.
            pub(super) fn sources(&self) -> Vec<(&'static str, &Source)> {
                let mut out = Vec::new();
                $( if let Some(value) = &self.$lkey { out.push((stringify!($lkey), &value.source)); } )*
                $( if let Some(value) = &self.$pkey { out.push((stringify!($pkey), &value.source)); } )*
                out
            }

            /// Overrides what `layer` sets; its file-only keys must have been taken out.
            pub(super) fn merge_file(&mut self, layer: FileLayer, source: &Source) {
                let FileLayer { $($fkey: _,)* $($lkey,)* $($pkey,)* } = layer;
                $( set(&mut self.$lkey, $lkey, source); )*
                $( set(&mut self.$pkey, $pkey, source); )*
            }

            /// Overrides what the environment sets.
            pub(super) fn merge_env(&mut self, env: EnvLookup<'_>) -> Result<(), ConfigError> {
                $( $( set_from_env(&mut self.$lkey, $lenv, env)?; )? )*
                $( $( set_from_env(&mut self.$pkey, $penv, env)?; )? )*
                Ok(())
            }

            /// The plain settings: each layered value or its default, checked.
            pub(super) fn take_plain(&mut self) -> Result<Plain, ConfigError> {
                Ok(Plain {
                    $( $pkey: {
                        let value = self.$pkey.take().unwrap_or_else(|| Sourced::new($pdefault, Source::Default));
                        $( check(stringify!($pkey), &value.value, $pcheck)?; )?
                        value
                    }, )*
                })
            }
        }

        /// The plain settings' effective values (also shown when no provider resolves).
        #[derive(Debug, Clone)]
        pub(super) struct Plain {
            $( pub(super) $pkey: Sourced<$pty>, )*
        }

        impl Plain {
            /// Each plain setting's `brute config` line.
            pub(super) fn describe(&self, line: &mut dyn FnMut(&str, String, &Source)) {
                $( line(stringify!($pkey), settings!(@show &self.$pkey.value $(, $pshow)?), &self.$pkey.source); )*
            }
        }

        /// The effective settings, each with where it came from.
        #[derive(Debug, Clone)]
        pub struct Settings {
            $( $(#[$rdoc])* pub $rkey: $rty, )*
            $( $(#[doc = $pdoc])* pub $pkey: Sourced<$pty>, )*
        }

        /// What `resolve` works out by hand.
        pub(super) struct Resolved {
            $( pub(super) $rkey: $rty, )*
        }

        impl Settings {
            pub(super) fn assemble(resolved: Resolved, plain: Plain) -> Self {
                Self {
                    $( $rkey: resolved.$rkey, )*
                    $( $pkey: plain.$pkey, )*
                }
            }

            pub(super) fn plain(&self) -> Plain {
                Plain { $( $pkey: self.$pkey.clone(), )* }
            }
        }
    };
}

/// The skill scripts' ceiling (`[skill_sandbox]`) is a table, shown in one line.
impl Value for crate::tool::skill_script::Ceiling {
    fn show(&self) -> String {
        format!(
            "read {:?}, write {:?}, network {}, timeout {} s",
            self.fs_read, self.fs_write, self.network, self.timeout
        )
    }
    fn parse_env(_text: &str) -> Result<Self, String> {
        Err("cannot be set from the environment (use [skill_sandbox] in config.toml)".to_owned())
    }
}
