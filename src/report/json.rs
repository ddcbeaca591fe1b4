//! `--format json`: the whole result, every call included (schema/result-v1.schema.json).

use super::Exporter;
use crate::result::RunResult;

pub(crate) struct Json;

impl Exporter for Json {
    fn render(&self, result: &RunResult) -> String {
        let mut s = serde_json::to_string_pretty(result).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        s
    }
}
