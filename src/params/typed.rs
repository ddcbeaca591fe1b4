//! Parameters as types: a scenario declares each parameter once, as a row of
//! [`scenario_params!`] (name, type, kind, default, help) or as a [`Param`] constant shared
//! by several, and reads them through a [`ParamReader`] into its own typed struct
//! ([`ScenarioParams`]) — so a misspelt name is a compile error, and the declared list and
//! the struct are checked against each other.

use std::time::Duration;

use super::{Choice, Kind, ParamError, ParamSpec, Params, Value};
use crate::units::Bytes;

/// A parameter declared with the type it is read as: the one place a scenario writes its
/// name, used both for the list it declares and for the read into its typed struct. Each
/// constructor pairs a [`Kind`] with the reader of that kind, so the two cannot disagree.
pub(crate) struct Param<T> {
    pub(crate) spec: ParamSpec,
    read: fn(&'static str, &Value) -> Result<T, ParamError>,
}

impl<T> Param<T> {
    const fn with(spec: ParamSpec, read: fn(&'static str, &Value) -> Result<T, ParamError>) -> Self {
        Param { spec, read }
    }

    /// The same parameter with the seed's original value.
    pub(crate) const fn seed(mut self, value: &'static str) -> Self {
        self.spec = self.spec.seed(value);
        self
    }

    /// The same parameter with another scaled default (scenarios sharing a role differ).
    pub(crate) const fn default(mut self, value: &'static str) -> Self {
        self.spec.default = value;
        self
    }

    pub(crate) const fn name(&self) -> &'static str {
        self.spec.name
    }
}

/// A parameter's help as [`scenario_params!`] joins its doc comment's lines (each starts
/// with the space after `///`).
pub(crate) const fn help(doc: &'static str) -> &'static str {
    doc.trim_ascii_start()
}

fn wrong_kind(name: &'static str, value: &Value, read: &'static str) -> ParamError {
    let declared = match value {
        Value::Size(_) => "a size",
        Value::Duration(_) => "a duration",
        Value::Count(_) => "a count",
        Value::Flag(_) => "a flag",
        Value::Choice(_) => "a choice",
        Value::SizeList(_) => "a size list",
        Value::CountList(_) => "a count list",
        Value::ChoiceList(_) => "a choice list",
        Value::Text(_) => "text",
    };
    ParamError::WrongKind { name, declared, read }
}

/// `text`, a word of `T`'s, as `T`.
fn word<T: Choice>(name: &'static str, text: &str) -> Result<T, ParamError> {
    T::from_name(text).ok_or_else(|| ParamError::Invalid {
        key: name.to_string(),
        value: text.to_string(),
        expected: format!("one of {}", T::NAMES.join(", ")),
    })
}

/// Declares a constructor of `Param<$ty>` for one kind of value.
macro_rules! param_kind {
    ($ctor:ident, $ty:ty, $kind:expr, $what:literal, $variant:ident($v:ident) => $out:expr) => {
        impl Param<$ty> {
            pub(crate) const fn $ctor(name: &'static str, default: &'static str, help: &'static str) -> Self {
                fn read(name: &'static str, value: &Value) -> Result<$ty, ParamError> {
                    match value {
                        Value::$variant($v) => Ok($out),
                        other => Err(wrong_kind(name, other, $what)),
                    }
                }
                Param::with(ParamSpec::new(name, $kind, default, help), read)
            }
        }
    };
}

param_kind!(size, Bytes, Kind::Size, "a size", Size(b) => *b);
param_kind!(duration, Duration, Kind::Duration, "a duration", Duration(d) => *d);
param_kind!(count, u64, Kind::Count, "a count", Count(n) => *n);
param_kind!(flag, bool, Kind::Flag, "a flag", Flag(f) => *f);
param_kind!(size_list, Vec<Bytes>, Kind::SizeList, "a size list", SizeList(v) => v.clone());
param_kind!(count_list, Vec<u64>, Kind::CountList, "a count list", CountList(v) => v.clone());

impl Param<String> {
    /// Free text checked by `check`, which returns what it expected.
    pub(crate) const fn text(
        name: &'static str,
        check: fn(&str) -> Result<(), String>,
        default: &'static str,
        help: &'static str,
    ) -> Self {
        fn read(name: &'static str, value: &Value) -> Result<String, ParamError> {
            match value {
                Value::Text(s) => Ok(s.clone()),
                other => Err(wrong_kind(name, other, "text")),
            }
        }
        Param::with(ParamSpec::new(name, Kind::Custom(check), default, help), read)
    }

    /// One of `words`, as the word itself (for a type that is not a [`Choice`]).
    pub(crate) const fn word(
        name: &'static str,
        words: &'static [&'static str],
        default: &'static str,
        help: &'static str,
    ) -> Self {
        fn read(name: &'static str, value: &Value) -> Result<String, ParamError> {
            match value {
                Value::Choice(s) => Ok(s.clone()),
                other => Err(wrong_kind(name, other, "a choice")),
            }
        }
        Param::with(ParamSpec::new(name, Kind::Choice(words), default, help), read)
    }
}

impl<T: Choice> Param<T> {
    /// One of `T`'s words.
    pub(crate) const fn choice(name: &'static str, default: &'static str, help: &'static str) -> Self {
        Self::choice_among(name, T::NAMES, default, help)
    }

    /// One of `words`, a subset of `T`'s.
    pub(crate) const fn choice_among(
        name: &'static str,
        words: &'static [&'static str],
        default: &'static str,
        help: &'static str,
    ) -> Self {
        fn read<T: Choice>(name: &'static str, value: &Value) -> Result<T, ParamError> {
            match value {
                Value::Choice(s) => word(name, s),
                other => Err(wrong_kind(name, other, "a choice")),
            }
        }
        Param::with(ParamSpec::new(name, Kind::Choice(words), default, help), read::<T>)
    }
}

impl<T: Choice> Param<Vec<T>> {
    /// A list of `T`'s words, each item once, in the order given.
    pub(crate) const fn choices(name: &'static str, default: &'static str, help: &'static str) -> Self {
        fn read<T: Choice>(name: &'static str, value: &Value) -> Result<Vec<T>, ParamError> {
            let Value::ChoiceList(items) = value else {
                return Err(wrong_kind(name, value, "a choice list"));
            };
            let mut out = Vec::new();
            for text in items {
                let item = word(name, text)?;
                if !out.contains(&item) {
                    out.push(item);
                }
            }
            Ok(out)
        }
        Param::with(
            ParamSpec::new(name, Kind::ChoiceList(T::NAMES), default, help),
            read::<T>,
        )
    }
}

/// Reads typed values out of [`Params`], noting each name read, so a test can check that a
/// scenario reads exactly what it declares.
pub(crate) struct ParamReader<'a> {
    params: &'a Params,
    read: Vec<&'static str>,
}

impl<'a> ParamReader<'a> {
    pub(super) fn new(params: &'a Params) -> Self {
        ParamReader {
            params,
            read: Vec::new(),
        }
    }

    pub(crate) fn get<T>(&mut self, param: &Param<T>) -> Result<T, ParamError> {
        let name = param.spec.name;
        self.read.push(name);
        let value = self.params.value(name).ok_or(ParamError::Undeclared(name))?;
        (param.read)(name, value)
    }

    /// The names read so far, in order.
    #[cfg(test)]
    pub(crate) fn names_read(&self) -> &[&'static str] {
        &self.read
    }
}

/// A scenario's parameters declared once each, as a table: a row is the help (its doc
/// comment, which `list` and `--help` show), the field and its type, and the [`Param`]
/// constructor with the rest of its arguments (`block_size: Bytes = size("16k").seed("16k")`:
/// the name is the field's). Makes the typed struct, each [`Param`] as a constant named as
/// its field (`RndwrParams::block_size`), the [`ScenarioParams`] reader and the list of
/// specs in the rows' order (as `Scenario::params` gives them).
macro_rules! scenario_params {
    ($(#[$meta:meta])* $vis:vis struct $name:ident {
        $(
            $(#[doc = $help:literal])*
            $field:ident: $ty:ty = $kind:ident($($arg:expr),*) $(.$also:ident($($also_arg:expr),*))*
        ),* $(,)?
    }) => {
        $(#[$meta])*
        $vis struct $name {
            $($field: $ty,)*
        }

        // Each parameter as a constant named as its field: `RndwrParams::block_size`.
        #[allow(non_upper_case_globals)]
        impl $name {
            $(
                $(#[doc = $help])*
                pub(crate) const $field: $crate::params::Param<$ty> = $crate::params::Param::$kind(
                    stringify!($field),
                    $($arg,)*
                    $crate::params::help(concat!($($help),*)),
                )$(.$also($($also_arg),*))*;
            )*

            /// The parameters as the scenario declares them, in its fields' order.
            fn specs() -> Vec<$crate::params::ParamSpec> {
                vec![$($name::$field.spec),*]
            }
        }

        impl $crate::params::ScenarioParams for $name {
            fn read(r: &mut $crate::params::ParamReader<'_>) -> Result<Self, $crate::params::ParamError> {
                Ok($name {
                    $($field: r.get(&$name::$field)?,)*
                })
            }
        }
    };
}
pub(crate) use scenario_params;

/// A scenario's parameters as one typed struct, read once from the resolved [`Params`].
pub(crate) trait ScenarioParams: Sized {
    fn read(r: &mut ParamReader<'_>) -> Result<Self, ParamError>;

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        Self::read(&mut params.reader())
    }
}

/// Checks that `P` reads every parameter it declares, and declares every one it reads.
#[cfg(test)]
pub(crate) fn assert_declared_and_read<P: ScenarioParams>(specs: &[ParamSpec]) {
    let params = Params::resolve("test", specs, &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut reader = params.reader();
    if let Err(e) = P::read(&mut reader) {
        panic!("reading the defaults failed: {e}");
    }
    let mut declared: Vec<&str> = specs.iter().map(|s| s.name).collect();
    let mut read = reader.read;
    declared.sort_unstable();
    read.sort_unstable();
    assert_eq!(
        declared, read,
        "declared parameters (left) and parameters read (right) differ"
    );
}
