//! `/proc/pressure/io`, pressure stall information per Documentation/accounting/psi.rst.

use std::str::FromStr;

/// `/proc/pressure/io`: `some avg10=0.00 avg60=0.00 avg300=0.00 total=N` and the same for
/// `full`; only the cumulative `total` stall times (µs) are kept, the averages are ignored
/// (the timeline's own differences give the rate at its interval).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pressure {
    pub(crate) some_total_us: u64,
    pub(crate) full_total_us: Option<u64>,
}

impl FromStr for Pressure {
    type Err = String;

    fn from_str(text: &str) -> Result<Pressure, String> {
        let total = |kind: &str| {
            let line = text.lines().find(|l| l.starts_with(kind))?;
            line.split_whitespace()
                .find_map(|w| w.strip_prefix("total="))?
                .parse::<u64>()
                .ok()
        };
        Ok(Pressure {
            some_total_us: total("some ").ok_or_else(|| format!("pressure: no `some ... total=` in {text:?}"))?,
            full_total_us: total("full "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRESSURE: &str = include_str!("../../tests/fixtures/proc-pressure-io.txt");

    #[test]
    fn pressure_fixture() {
        let p: Pressure = PRESSURE.parse().unwrap();
        assert!(p.full_total_us.is_some_and(|full| full <= p.some_total_us));
        let cpu_style: Pressure = "some avg10=1.00 avg60=0.50 avg300=0.10 total=1234\n".parse().unwrap();
        assert_eq!(
            cpu_style,
            Pressure {
                some_total_us: 1234,
                full_total_us: None
            }
        );
        assert!("full avg10=0 total=1".parse::<Pressure>().is_err());
    }
}
