//! Scenario parameters: what each scenario declares (`ParamSpec`), what the user sets with
//! `--set KEY=VALUE`, and the validated, typed values a scenario reads (`Params`).
//!
//! Every parameter has a scaled default (finishes in seconds) and, where the seed post states
//! it, the original value, so `fsynclab list` can show both and `--set` restores the original.

use std::collections::BTreeMap;
use std::time::Duration;

use thiserror::Error;

use crate::units::{format_duration, format_size, parse_duration, parse_size, Bytes};

mod typed;

#[cfg(test)]
pub(crate) use typed::assert_declared_and_read;
pub(crate) use typed::{help, scenario_params, Param, ParamReader, ScenarioParams};

/// The type of a parameter, which decides how its text is parsed.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// A size: `4k`, `1M`, `8G`.
    Size,
    /// A duration: `250ms`, `1s`, `2m`.
    Duration,
    /// A whole number.
    Count,
    /// `0` or `1`.
    Flag,
    /// One word out of a fixed set.
    Choice(&'static [&'static str]),
    /// A comma-separated list of sizes.
    SizeList,
    /// A comma-separated list of whole numbers.
    CountList,
    /// A comma-separated list of words out of a fixed set.
    ChoiceList(&'static [&'static str]),
    /// Free text checked by the scenario's own validator, which returns what it expected.
    Custom(fn(&str) -> Result<(), String>),
}

impl Kind {
    /// What a value of this kind looks like, for `fsynclab list` and error messages.
    pub(crate) fn expected(&self) -> String {
        match self {
            Kind::Size => "a size like 4k, 1M or 8G".into(),
            Kind::Duration => "a duration like 1s, 250ms or 2m".into(),
            Kind::Count => "a whole number".into(),
            Kind::Flag => "0 or 1".into(),
            Kind::Choice(words) => format!("one of {}", words.join(", ")),
            Kind::SizeList => "a comma-separated list of sizes like 4k,64k,1M".into(),
            Kind::CountList => "a comma-separated list of whole numbers like 1,2,4".into(),
            Kind::ChoiceList(words) => format!("a comma-separated list of {}", words.join(", ")),
            Kind::Custom(check) => check("").err().unwrap_or_else(|| "text".into()),
        }
    }

    fn unit(&self) -> &'static str {
        match self {
            Kind::Size | Kind::SizeList => "bytes",
            Kind::Duration => "time",
            Kind::Count | Kind::CountList => "count",
            Kind::Flag => "0|1",
            Kind::Choice(_) | Kind::ChoiceList(_) => "choice",
            Kind::Custom(_) => "text",
        }
    }
}

/// One parameter as a scenario declares it.
#[derive(Clone, Debug)]
pub(crate) struct ParamSpec {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    /// The scaled default, as text a user could type.
    pub(crate) default: &'static str,
    /// The seed's original value, where the post states it.
    pub(crate) seed: Option<&'static str>,
    pub(crate) help: &'static str,
}

impl ParamSpec {
    pub(crate) const fn new(name: &'static str, kind: Kind, default: &'static str, help: &'static str) -> Self {
        ParamSpec {
            name,
            kind,
            default,
            seed: None,
            help,
        }
    }

    /// The same parameter with the seed's original value.
    pub(crate) const fn seed(mut self, value: &'static str) -> Self {
        self.seed = Some(value);
        self
    }

    pub(crate) fn unit(&self) -> &'static str {
        self.kind.unit()
    }
}

/// A parsed parameter value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Size(Bytes),
    Duration(Duration),
    Count(u64),
    Flag(bool),
    Choice(String),
    SizeList(Vec<Bytes>),
    CountList(Vec<u64>),
    ChoiceList(Vec<String>),
    Text(String),
}

impl Value {
    /// The canonical text of the value: what `--set` would take to reproduce it.
    pub(crate) fn to_text(&self) -> String {
        let join = |parts: Vec<String>| parts.join(",");
        match self {
            Value::Size(b) => format_size(*b),
            Value::Duration(d) => format_duration(*d),
            Value::Count(n) => n.to_string(),
            Value::Flag(f) => u8::from(*f).to_string(),
            Value::Choice(s) | Value::Text(s) => s.clone(),
            Value::SizeList(v) => join(v.iter().map(|b| format_size(*b)).collect()),
            Value::CountList(v) => join(v.iter().map(u64::to_string).collect()),
            Value::ChoiceList(v) => v.join(","),
        }
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum ParamError {
    #[error("--set {key}: unknown parameter for {scope}; valid: {valid}")]
    Unknown { key: String, scope: String, valid: String },
    #[error("--set {key}={value}: expected {expected}")]
    Invalid {
        key: String,
        value: String,
        expected: String,
    },
    #[error("--set {0}: expected KEY=VALUE, e.g. --set sleep=250ms")]
    Malformed(String),
    /// A scenario's default does not parse: a bug in its declaration.
    #[error("the default of parameter {name} does not parse: expected {expected}")]
    Default { name: &'static str, expected: String },
    /// A scenario read a parameter it did not declare: a bug its agreement test catches.
    #[error("parameter {0} is read but not declared")]
    Undeclared(&'static str),
    /// A parameter declared with one kind was read as another: a bug its agreement test catches.
    #[error("parameter {name} is declared as {declared}, not read as {read}")]
    WrongKind {
        name: &'static str,
        declared: &'static str,
        read: &'static str,
    },
}

/// A parameter that takes one word of a fixed set, parsed into its own type (`SyncMethod`,
/// `Placement`...). `NAMES[i]` is the name of `ALL[i]`.
pub(crate) trait Choice: Copy + PartialEq + 'static {
    const NAMES: &'static [&'static str];
    const ALL: &'static [Self];

    fn name(self) -> &'static str {
        let i = Self::ALL.iter().position(|c| *c == self).unwrap_or(0);
        Self::NAMES[i]
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::NAMES.iter().position(|n| *n == name).map(|i| Self::ALL[i])
    }
}

/// Parses one value of `kind` from `text`.
pub(crate) fn parse_value(kind: &Kind, text: &str) -> Result<Value, String> {
    let bad = || kind.expected();
    let list = |t: &str| -> Vec<String> { t.split(',').map(|s| s.trim().to_string()).collect() };
    match kind {
        Kind::Size => parse_size(text).map(Value::Size).map_err(|_| bad()),
        Kind::Duration => parse_duration(text).map(Value::Duration).map_err(|e| match e {
            crate::units::UnitError::DurationTooLong => "a duration up to 584 years".to_string(),
            _ => bad(),
        }),
        Kind::Count => text.trim().parse().map(Value::Count).map_err(|_| bad()),
        Kind::Flag => match text.trim() {
            "0" | "false" | "no" | "off" => Ok(Value::Flag(false)),
            "1" | "true" | "yes" | "on" => Ok(Value::Flag(true)),
            _ => Err(bad()),
        },
        Kind::Choice(words) => {
            let t = text.trim();
            if words.contains(&t) {
                Ok(Value::Choice(t.to_string()))
            } else {
                Err(bad())
            }
        }
        Kind::SizeList => list(text)
            .iter()
            .map(|s| parse_size(s).map_err(|_| bad()))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::SizeList),
        Kind::CountList => list(text)
            .iter()
            .map(|s| s.parse::<u64>().map_err(|_| bad()))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::CountList),
        Kind::ChoiceList(words) => {
            let items = list(text);
            if items.iter().all(|i| words.contains(&i.as_str())) {
                Ok(Value::ChoiceList(items))
            } else {
                Err(bad())
            }
        }
        Kind::Custom(check) => check(text.trim()).map(|()| Value::Text(text.trim().to_string())),
    }
}

/// Splits a `--set` argument into key and value.
pub(crate) fn split_assignment(arg: &str) -> Result<(String, String), ParamError> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(ParamError::Malformed(arg.to_string())),
    }
}

/// The effective, validated parameters of one run.
#[derive(Clone, Debug, Default)]
pub(crate) struct Params {
    values: BTreeMap<&'static str, Value>,
}

impl Params {
    /// Applies `--set` assignments over the defaults of `specs`. `scope` names the scenario in
    /// error messages.
    pub(crate) fn resolve(scope: &str, specs: &[ParamSpec], sets: &[String]) -> Result<Params, ParamError> {
        let mut values = BTreeMap::new();
        for spec in specs {
            let value = parse_value(&spec.kind, spec.default).map_err(|expected| ParamError::Default {
                name: spec.name,
                expected,
            })?;
            values.insert(spec.name, value);
        }
        for arg in sets {
            let (key, text) = split_assignment(arg)?;
            let spec = specs
                .iter()
                .find(|s| s.name == key)
                .ok_or_else(|| ParamError::Unknown {
                    key: key.clone(),
                    scope: scope.to_string(),
                    valid: specs.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
                })?;
            let value = parse_value(&spec.kind, &text).map_err(|expected| ParamError::Invalid {
                key: key.clone(),
                value: text.clone(),
                expected,
            })?;
            values.insert(spec.name, value);
        }
        Ok(Params { values })
    }

    /// A reader of these parameters that notes which it read (see [`ScenarioParams`]).
    pub(crate) fn reader(&self) -> ParamReader<'_> {
        ParamReader::new(self)
    }

    fn value(&self, name: &str) -> Option<&Value> {
        self.values.get(name)
    }

    /// Every parameter with its effective value as canonical text, for the JSON result.
    pub(crate) fn to_text_map(&self) -> BTreeMap<String, String> {
        self.values.iter().map(|(k, v)| (k.to_string(), v.to_text())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[ParamSpec] = &[
        ParamSpec::new("write_size", Kind::Size, "1M", "bytes per write").seed("1M"),
        ParamSpec::new("sleep", Kind::Duration, "1s", "pause"),
        ParamSpec::new("iterations", Kind::Count, "10", "how many"),
        ParamSpec::new("sync", Kind::Choice(&["fsync", "fdatasync"]), "fsync", "method"),
        ParamSpec::new("sizes", Kind::SizeList, "4k,64k", "sizes"),
    ];

    #[test]
    fn defaults_then_sets() {
        let p = Params::resolve("t", SPECS, &["sleep=250ms".into(), "sync=fdatasync".into()]).unwrap();
        let mut r = p.reader();
        assert_eq!(r.get(&Param::size("write_size", "", "")).unwrap(), Bytes(1 << 20));
        assert_eq!(
            r.get(&Param::duration("sleep", "", "")).unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(r.get(&Param::count("iterations", "", "")).unwrap(), 10);
        assert_eq!(
            r.get(&Param::size_list("sizes", "", "")).unwrap(),
            [Bytes(4096), Bytes(65536)]
        );
        assert_eq!(p.to_text_map()["sync"], "fdatasync");
        assert_eq!(p.to_text_map()["sleep"], "250ms");
    }

    #[test]
    fn a_wrong_read_is_an_error_not_a_panic() {
        let p = Params::resolve("t", SPECS, &[]).unwrap();
        let mut r = p.reader();
        let err = r.get(&Param::count("nosuch", "", "")).unwrap_err();
        assert_eq!(err, ParamError::Undeclared("nosuch"));
        let err = r.get(&Param::count("sleep", "", "")).unwrap_err();
        assert!(matches!(err, ParamError::WrongKind { name: "sleep", .. }), "{err}");
    }

    #[test]
    fn unknown_key_names_the_valid_ones() {
        let err = Params::resolve("t", SPECS, &["nope=1".into()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--set nope: unknown parameter for t; valid: write_size, sleep, iterations, sync, sizes"
        );
    }

    #[test]
    fn bad_value_says_what_was_expected() {
        let err = Params::resolve("t", SPECS, &["sleep=abc".into()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--set sleep=abc: expected a duration like 1s, 250ms or 2m"
        );
        let err = Params::resolve("t", SPECS, &["sync=nosuch".into()]).unwrap_err();
        assert_eq!(err.to_string(), "--set sync=nosuch: expected one of fsync, fdatasync");
        let err = Params::resolve("t", SPECS, &["sleep".into()]).unwrap_err();
        assert!(matches!(err, ParamError::Malformed(_)));
    }
}
