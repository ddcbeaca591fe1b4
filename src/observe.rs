//! What a running scenario tells the outside while it runs: the seed's own output lines as
//! they happen, the phase it is in and how far along, each foreground call. Reporters
//! implement [`Observer`]; the engine never prints.

use crate::measure::Sample;

#[derive(Debug)]
pub(crate) enum Event<'a> {
    /// A line the seed's original program printed at this point (`--format seed` prints it).
    SeedLine(&'a str),
    /// A phase begins: `total` is its length in `unit`s when known.
    Phase {
        name: &'a str,
        total: Option<u64>,
        unit: Unit,
    },
    /// How much of the current phase is done, in its unit.
    Progress { done: u64 },
    /// A timed foreground call.
    Sample(&'a Sample),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Bytes,
    Millis,
    Items,
}

pub(crate) trait Observer {
    fn event(&mut self, event: Event<'_>);
}
