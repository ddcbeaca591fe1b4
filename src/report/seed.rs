//! `--format seed`: the lines the seed's original programs printed (`fsync time: 3.4732`,
//! `write time: 0.0009s fsync time: 2.0142s`, `1.984 GB written in 82.75 (24 MB/s)`), so
//! that old habits and scripts carry over. During a run they are printed as they happen;
//! for a saved result (`fsynclab show`) they are rendered from its details.

use super::Exporter;
use crate::observe::Event;
use crate::result::RunResult;

pub(crate) struct Seed {
    /// A run is going on: print each line as it happens, and nothing at the end.
    pub(crate) live: bool,
}

impl Exporter for Seed {
    fn live_line(&mut self, event: &Event<'_>) -> Option<String> {
        match event {
            Event::SeedLine(line) if self.live => Some(line.to_string()),
            _ => None,
        }
    }

    fn render(&self, result: &RunResult) -> String {
        if self.live {
            return String::new();
        }
        let lines = result
            .details
            .as_ref()
            .map(|d| d.views().seed_lines(&result.measured()))
            .unwrap_or_default();
        lines.iter().map(|l| format!("{l}\n")).collect()
    }
}
