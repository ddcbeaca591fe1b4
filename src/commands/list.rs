//! `fsynclab list`: the scenarios, their purpose, seed and parameters, as text or JSON.

use anyhow::Result;

use crate::cli::ListFormat;
use crate::params::ParamSpec;
use crate::scenario::{self, Scenario};

use super::run::find;

pub(crate) fn list(only: Option<&str>, format: ListFormat) -> Result<i32> {
    let scenarios: Vec<&Scenario> = match only {
        Some(name) => vec![find(name)?],
        None => scenario::all(),
    };
    let out = match format {
        ListFormat::Text => list_text(&scenarios),
        ListFormat::Json => serde_json::to_string_pretty(&list_json(&scenarios))? + "\n",
    };
    crate::report::print(&out)
}

fn list_text(scenarios: &[&Scenario]) -> String {
    let mut out = String::new();
    for s in scenarios {
        out.push_str(&format!("{}\n  {}\n  seed {}\n", s.name(), s.purpose(), s.seed()));
        if !scenario::in_suite(s) {
            out.push_str(&format!(
                "  not in `fsynclab suite`: run it with `fsynclab run {}`\n",
                s.name()
            ));
        }
        let specs = s.params();
        let w = specs.iter().map(|p| p.name.len()).max().unwrap_or(0);
        let dw = specs.iter().map(|p| p.default.len()).max().unwrap_or(0);
        for p in &specs {
            let seed = p.seed.map(|v| format!(" (seed: {v})")).unwrap_or_default();
            out.push_str(&format!(
                "    {:<w$}  {:<dw$}  [{}] {}{}\n",
                p.name,
                p.default,
                p.unit(),
                p.help,
                seed
            ));
        }
        out.push('\n');
    }
    out.push_str("Set any parameter with --set KEY=VALUE; the seed's values reproduce the original experiment.\n");
    out
}

fn list_json(scenarios: &[&Scenario]) -> serde_json::Value {
    let param = |p: &ParamSpec| {
        serde_json::json!({
            "name": p.name, "default": p.default, "seed": p.seed,
            "unit": p.unit(), "expected": p.kind.expected(), "help": p.help,
        })
    };
    serde_json::Value::Array(
        scenarios
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name(), "purpose": s.purpose(), "seed": s.seed(),
                    "in_suite": scenario::in_suite(s),
                    "params": s.params().iter().map(param).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}
