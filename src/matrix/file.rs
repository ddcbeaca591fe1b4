//! A matrix written down in a small TOML file (`fsynclab matrix --file seed002.toml`):
//!
//! ```toml
//! scenario = "fsync-tps"
//! repeat = 5
//! figure = "commit.tps"        # or a list; optional
//! columns = "coordination"     # optional
//! [set]                        # parameters every cell shares
//! threads = "4"
//! [target]                     # testbed options every cell shares
//! scratch = "ext4"
//! [axes]                       # in the order the table nests them
//! device = ["ram", "hdd-7200"]
//! coordination = ["none", "wal"]
//! ```
//!
//! Values may be strings, integers or booleans; an axis value is taken whole, commas and
//! all (the way to give `flush=5ms,write=80M`).

use std::path::Path;

use toml::{Table, Value};

use super::plan::{normalize_key, Axis};
use crate::error::Usage;
use crate::testbed::Key;

/// What a matrix file says; everything is optional, the command line adds to it.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct MatrixFile {
    pub(crate) scenario: Option<String>,
    pub(crate) repeat: Option<u32>,
    pub(crate) sets: Vec<String>,
    pub(crate) target: Vec<(String, String)>,
    pub(crate) axes: Vec<Axis>,
    pub(crate) figures: Vec<String>,
    pub(crate) columns: Option<String>,
}

const KEYS: [&str; 7] = ["scenario", "repeat", "figure", "columns", "set", "target", "axes"];

pub(crate) fn read(path: &Path) -> Result<MatrixFile, Usage> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| Usage(format!("--file {shown}: cannot read it ({e})")))?;
    parse(&text).map_err(|e| Usage(format!("--file {shown}: {e}")))
}

fn scalar(key: &str, v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        Value::Boolean(b) => Ok(u8::from(*b).to_string()),
        _ => Err(format!("{key}: expected a string or a number")),
    }
}

fn table<'a>(doc: &'a Table, key: &str) -> Result<Option<&'a Table>, String> {
    match doc.get(key) {
        None => Ok(None),
        Some(Value::Table(t)) => Ok(Some(t)),
        Some(_) => Err(format!("{key}: expected a table ([{key}])")),
    }
}

pub(crate) fn parse(text: &str) -> Result<MatrixFile, String> {
    let doc: Table = text.parse().map_err(|e: toml::de::Error| e.message().to_string())?;
    if let Some(k) = doc.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!("unknown key '{k}'; a matrix file has {}", KEYS.join(", ")));
    }
    let mut out = MatrixFile {
        scenario: doc.get("scenario").map(|v| scalar("scenario", v)).transpose()?,
        columns: doc.get("columns").map(|v| scalar("columns", v)).transpose()?,
        ..MatrixFile::default()
    };
    if let Some(v) = doc.get("repeat") {
        out.repeat = Some(
            v.as_integer()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n >= 1)
                .ok_or("repeat: expected a whole number of at least 1")?,
        );
    }
    match doc.get("figure") {
        None => {}
        Some(Value::Array(a)) => {
            for v in a {
                out.figures.push(scalar("figure", v)?);
            }
        }
        Some(v) => out.figures.push(scalar("figure", v)?),
    }
    if let Some(t) = table(&doc, "set")? {
        for (k, v) in t {
            out.sets.push(format!("{k}={}", scalar(k, v)?));
        }
    }
    if let Some(t) = table(&doc, "target")? {
        for (k, v) in t {
            let Some(key) = Key::from_name(k) else {
                return Err(format!("[target] {k}: not a testbed option; valid: {}", Key::names()));
            };
            out.target.push((key.name().to_string(), scalar(k, v)?));
        }
    }
    if let Some(t) = table(&doc, "axes")? {
        for (k, v) in t {
            let values = match v {
                Value::Array(a) => a.iter().map(|x| scalar(k, x)).collect::<Result<Vec<_>, _>>()?,
                other => vec![scalar(k, other)?],
            };
            out.axes.push(Axis {
                key: normalize_key(k),
                values,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_file_keeps_the_order_of_its_axes() {
        let f = parse(
            r#"
scenario = "fsync-tps"
repeat = 5
figure = "commit.tps"
[set]
threads = 4
[target]
scratch = "ext4"
dirty_ratio = 10
[axes]
device = ["ram", "flush=5ms,write=80M", "hdd-7200"]
coordination = ["none", "wal"]
"#,
        )
        .unwrap();
        assert_eq!(f.scenario.as_deref(), Some("fsync-tps"));
        assert_eq!(f.repeat, Some(5));
        assert_eq!(f.sets, ["threads=4"]);
        assert_eq!(
            f.target,
            [("scratch".into(), "ext4".into()), ("dirty-ratio".into(), "10".into())]
        );
        let keys: Vec<&str> = f.axes.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(keys, ["device", "coordination"], "in the file's order");
        assert_eq!(f.axes[0].values[1], "flush=5ms,write=80M", "taken whole");
        assert_eq!(f.figures, ["commit.tps"]);
    }

    #[test]
    fn mistakes_in_a_matrix_file_are_named() {
        assert!(parse("scenarios = 1").unwrap_err().contains("unknown key 'scenarios'"));
        assert!(parse("repeat = 0").unwrap_err().contains("at least 1"));
        assert!(parse("[target]\ncolour = 1")
            .unwrap_err()
            .contains("not a testbed option"));
        assert!(parse("set = 3").unwrap_err().contains("expected a table"));
        assert!(parse("scenario = [").is_err());
    }
}
