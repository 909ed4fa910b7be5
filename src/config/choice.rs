//! Settings whose value is one of a few names (`sandbox`, `reasoning_effort`, `notify`,
//! `hyperlinks`). Each is a typed enum, read at load time: a wrong name in a file or a
//! variable is an error that names where it came from and every allowed name, so a typo is
//! never silently the default later. Files, variables and `brute config` spell each value
//! the same way.

use super::Value;

/// A type whose values are a closed set of names.
pub trait Choice: Copy + 'static {
    /// Every allowed name, in the order messages and the reference list them.
    const NAMES: &'static [&'static str];
    /// The value a name stands for; `None` for any other text.
    fn from_name(name: &str) -> Option<Self>;
    /// The name files, variables and `brute config` use.
    fn name(self) -> &'static str;
}

/// The allowed names as a sentence ends them: `low, medium or high`.
pub fn allowed<T: Choice>() -> String {
    match T::NAMES.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Reads a choice from text; the error completes "`text` ...".
fn parse<T: Choice>(text: &str) -> Result<T, String> {
    T::from_name(text).ok_or_else(|| format!("must be {}", allowed::<T>()))
}

/// Each choice is a setting value: shown and spelled by its name.
macro_rules! choice_values {
    ($($ty:ty),*) => {$(
        impl Value for $ty {
            fn show(&self) -> String {
                Choice::name(*self).to_owned()
            }
            fn parse_env(text: &str) -> Result<Self, String> {
                parse(text)
            }
            fn from_file<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>
            where
                Self: serde::Deserialize<'de>,
            {
                let text = <String as serde::Deserialize>::deserialize(deserializer)?;
                parse(&text).map_err(|message| serde::de::Error::custom(format!("`{text}` {message}")))
            }
            fn kind() -> String {
                let names: Vec<String> = <$ty as Choice>::NAMES.iter().map(|name| format!("`{name}`")).collect();
                format!("one of {}", names.join(", "))
            }
        }
    )*};
}

choice_values!(crate::sandbox::Mode, crate::provider::Effort, NotifyChannel, Hyperlinks);

impl Choice for crate::sandbox::Mode {
    const NAMES: &'static [&'static str] = crate::sandbox::Mode::NAMES;
    fn from_name(name: &str) -> Option<Self> {
        Self::parse(name)
    }
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for crate::provider::Effort {
    const NAMES: &'static [&'static str] = &crate::provider::Effort::NAMES;
    fn from_name(name: &str) -> Option<Self> {
        Self::parse(name)
    }
    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// Defines a choice enum of config's own: its variants with their names, `as_str`, and the
/// [`Choice`] impl, from one list.
macro_rules! choice_enum {
    (
        $(#[doc = $doc:literal])*
        pub enum $name:ident (default $default:ident) {
            $( $(#[doc = $vdoc:literal])* $variant:ident = $text:literal, )*
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
        pub enum $name {
            $( $(#[doc = $vdoc])* #[serde(rename = $text)] $variant, )*
        }

        impl Default for $name {
            fn default() -> Self {
                Self::$default
            }
        }

        impl $name {
            /// The name the setting uses.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $text, )*
                }
            }
        }

        impl Choice for $name {
            const NAMES: &'static [&'static str] = &[$($text),*];
            fn from_name(name: &str) -> Option<Self> {
                match name {
                    $( $text => Some(Self::$variant), )*
                    _ => None,
                }
            }
            fn name(self) -> &'static str {
                self.as_str()
            }
        }
    };
}

choice_enum! {
    /// The `notify` setting: how the UI calls the person (the UI maps it to bytes for the
    /// terminal).
    pub enum NotifyChannel (default Bel) {
        /// The terminal bell.
        Bel = "bel",
        /// An OSC 9 desktop notification (and a bell).
        Osc9 = "osc9",
        /// Nothing.
        Off = "off",
    }
}

choice_enum! {
    /// The `hyperlinks` setting: whether links are written as OSC 8 hyperlinks (the UI
    /// decides what `auto` means for the terminal at hand).
    pub enum Hyperlinks (default Auto) {
        /// Where the terminal is known to support them.
        Auto = "auto",
        On = "on",
        Off = "off",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config file's string, as serde hands it over.
    fn text(name: &str) -> serde::de::value::StrDeserializer<'_, serde::de::value::Error> {
        serde::de::IntoDeserializer::into_deserializer(name)
    }

    /// Every name reads back as itself, in files, variables and `brute config` alike.
    fn round_trips<T: Choice + Value + PartialEq + std::fmt::Debug + serde::de::DeserializeOwned>() {
        for name in T::NAMES {
            let value = T::from_name(name).unwrap();
            assert_eq!(value.name(), *name);
            assert_eq!(value.show(), *name);
            assert_eq!(T::parse_env(name).unwrap(), value);
            assert_eq!(T::from_file(text(name)).unwrap(), value);
        }
        assert!(T::from_name("surely-not-a-name").is_none());
    }

    #[test]
    fn every_choice_round_trips_its_names() {
        round_trips::<crate::sandbox::Mode>();
        round_trips::<crate::provider::Effort>();
        round_trips::<NotifyChannel>();
        round_trips::<Hyperlinks>();
    }

    #[test]
    fn a_wrong_name_lists_the_allowed_ones() {
        assert_eq!(allowed::<NotifyChannel>(), "bel, osc9 or off");
        assert_eq!(
            <crate::sandbox::Mode as Value>::parse_env("all").unwrap_err(),
            "must be read-only, workspace-write or full-access"
        );
        let err = <crate::provider::Effort as Value>::from_file(text("max")).unwrap_err();
        assert_eq!(err.to_string(), "`max` must be low, medium or high");
        assert_eq!(<Hyperlinks as Value>::kind(), "one of `auto`, `on`, `off`");
    }

    #[test]
    fn the_defaults_are_the_documented_ones() {
        assert_eq!(NotifyChannel::default(), NotifyChannel::Bel);
        assert_eq!(Hyperlinks::default(), Hyperlinks::Auto);
    }
}
