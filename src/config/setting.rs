//! The machinery behind the settings list in `config/mod.rs`: how a value type is shown and
//! spelled in the environment ([`Value`]), and the `settings!` macro that turns one line per
//! setting into the file layer, the merge, the settings struct and the `brute config` lines, so
//! that a new setting cannot be half-added.

use std::path::PathBuf;

/// A type a setting can have: how `brute config` shows it and how an environment variable
/// spells it.
pub trait Value: Sized {
    /// The value as `brute config` prints it.
    fn show(&self) -> String;
    /// Parses an environment variable's text; the error completes "`text` ...".
    fn parse_env(text: &str) -> Result<Self, String>;
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
}

impl Value for String {
    fn show(&self) -> String {
        self.clone()
    }
    fn parse_env(text: &str) -> Result<Self, String> {
        Ok(text.to_owned())
    }
}

impl Value for PathBuf {
    fn show(&self) -> String {
        self.display().to_string()
    }
    fn parse_env(text: &str) -> Result<Self, String> {
        Ok(PathBuf::from(text))
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
}

/// An optional value: unset shows as `(not set)`; a variable that is set sets it.
impl<T: Value> Value for Option<T> {
    fn show(&self) -> String {
        self.as_ref().map_or_else(|| "(not set)".to_owned(), T::show)
    }
    fn parse_env(text: &str) -> Result<Self, String> {
        T::parse_env(text).map(Some)
    }
}

/// Declares every config key once. Four groups, in this order:
///
/// - `file_only { key: Type, }`: keys only files hold, taken out of a layer by hand before
///   `Gathered::merge_file` (e.g. `[[tools]]`, which accumulates instead of overriding);
/// - `layered { key: Type, env = "VAR"?; }`: layered like every key (files, then the variable,
///   then flags by hand) but resolved by hand into the fields of `resolved`;
/// - `resolved { field: Type, }`: the `Settings` fields `resolve` works out by hand;
/// - `plain { key: Type = default, env = "VAR"?, check = fn?, show = fn?; }`: everything else.
///   One line is the whole setting: a `FileLayer` key, an optional variable, a `Settings`
///   field with its source, a default, an optional check (`fn(&T) -> Result<(), &str>`) and a
///   `brute config` line (shown with `Value::show` unless `show` gives a `fn(&T) -> String`).
///
/// The generated items name `Deserialize`, `Sourced`, `Source`, `ConfigError`, `EnvLookup`,
/// `set`, `set_from_env` and `check` from the module that invokes it.
macro_rules! settings {
    (@show $value:expr) => { $crate::config::Value::show($value) };
    (@show $value:expr, $show:expr) => { ($show)($value) };
    (
        file_only { $( $(#[$fdoc:meta])* $fkey:ident : $fty:ty, )* }
        layered { $( $(#[$ldoc:meta])* $lkey:ident : $lty:ty $(, env = $lenv:expr)? ; )* }
        resolved { $( $(#[$rdoc:meta])* $rkey:ident : $rty:ty, )* }
        plain {
            $(
                $(#[$pdoc:meta])*
                $pkey:ident : $pty:ty = $pdefault:expr
                $(, env = $penv:expr)? $(, check = $pcheck:expr)? $(, show = $pshow:expr)? ;
            )*
        }
    ) => {
        /// One config file's contents. Every key is optional: a layer only overrides what it sets.
        #[derive(Debug, Clone, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct FileLayer {
            $( $(#[$fdoc])* pub $fkey: Option<$fty>, )*
            $( $(#[$ldoc])* pub $lkey: Option<$lty>, )*
            $( $(#[$pdoc])* pub $pkey: Option<$pty>, )*
        }

        impl FileLayer {
            /// Every key a config file may hold.
            pub const KEYS: &'static [&'static str] =
                &[$(stringify!($fkey),)* $(stringify!($lkey),)* $(stringify!($pkey),)*];
        }

        /// The layers' values so far, before defaults and provider resolution.
        #[derive(Debug, Clone, Default)]
        struct Gathered {
            $( $lkey: Option<Sourced<$lty>>, )*
            $( $pkey: Option<Sourced<$pty>>, )*
        }

        impl Gathered {
            /// The brute variables the environment layer reads, each with its key.
            const ENV_VARS: &'static [(&'static str, &'static str)] =
                &[$($(($lenv, stringify!($lkey)),)?)* $($(($penv, stringify!($pkey)),)?)*];

            /// Where each key set so far came from.
            fn sources(&self) -> Vec<(&'static str, &Source)> {
                let mut out = Vec::new();
                $( if let Some(value) = &self.$lkey { out.push((stringify!($lkey), &value.source)); } )*
                $( if let Some(value) = &self.$pkey { out.push((stringify!($pkey), &value.source)); } )*
                out
            }

            /// Overrides what `layer` sets; its file-only keys must have been taken out.
            fn merge_file(&mut self, layer: FileLayer, source: &Source) {
                let FileLayer { $($fkey: _,)* $($lkey,)* $($pkey,)* } = layer;
                $( set(&mut self.$lkey, $lkey, source); )*
                $( set(&mut self.$pkey, $pkey, source); )*
            }

            /// Overrides what the environment sets.
            fn merge_env(&mut self, env: EnvLookup<'_>) -> Result<(), ConfigError> {
                $( $( set_from_env(&mut self.$lkey, $lenv, env)?; )? )*
                $( $( set_from_env(&mut self.$pkey, $penv, env)?; )? )*
                Ok(())
            }

            /// The plain settings: each layered value or its default, checked.
            fn take_plain(&mut self) -> Result<Plain, ConfigError> {
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
        struct Plain {
            $( $pkey: Sourced<$pty>, )*
        }

        impl Plain {
            /// Each plain setting's `brute config` line.
            fn describe(&self, line: &mut dyn FnMut(&str, String, &Source)) {
                $( line(stringify!($pkey), settings!(@show &self.$pkey.value $(, $pshow)?), &self.$pkey.source); )*
            }
        }

        /// The effective settings, each with where it came from.
        #[derive(Debug, Clone)]
        pub struct Settings {
            $( $(#[$rdoc])* pub $rkey: $rty, )*
            $( $(#[$pdoc])* pub $pkey: Sourced<$pty>, )*
        }

        /// What `resolve` works out by hand.
        struct Resolved {
            $( $rkey: $rty, )*
        }

        impl Settings {
            fn assemble(resolved: Resolved, plain: Plain) -> Self {
                Self {
                    $( $rkey: resolved.$rkey, )*
                    $( $pkey: plain.$pkey, )*
                }
            }

            fn plain(&self) -> Plain {
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
