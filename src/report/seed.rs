//! `--format seed`: the lines the seed's original programs printed (`fsync time: 3.4732`,
//! `write time: 0.0009s fsync time: 2.0142s`, `1.984 GB written in 82.75 (24 MB/s)`), live,
//! so that old habits and scripts carry over. Scenarios compose the lines; this prints them.

use super::Exporter;
use crate::observe::Event;
use crate::result::RunResult;

pub struct Seed;

impl Exporter for Seed {
    fn live_line(&mut self, event: &Event<'_>) -> Option<String> {
        match event {
            Event::SeedLine(line) => Some(line.to_string()),
            _ => None,
        }
    }

    fn render(&self, _result: &RunResult) -> String {
        String::new()
    }
}
