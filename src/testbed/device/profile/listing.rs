//! How the profiles read to a user: one line of figures per disk ([`describe`], in the
//! result's device name too) and the whole of `fsynclab list-devices` ([`listing`]).

use std::fmt::Write as _;
use std::time::Duration;

use super::super::model::{rotation_ns, DiskFigures, Mechanics};
use super::builtin::MB;
use super::named;
use super::parse::{KEYS, RANGES};
use crate::units::human_size;

/// What `fail=` does, for `list-devices`.
const FAULTS_HELP: &str = "
Faults (fail=RULE, repeatable): the drive answers the requests a rule matches with EIO at once,
and they change nothing (a failed write does not enter the cache; a failed flush drains nothing).
  fail=write|read|flush   the kind of request
  :range=OFFSET+LENGTH    only reads and writes touching these bytes of the image (1G+64M)
  :after=N                once N requests the rule matches have gone through
  :after=DURATION         once DURATION has passed since the device started
  :p=FRACTION             each matching request fails with this probability (0.1 or 10%)
  :times=K                transient: K requests fail, then the rule lets everything through
  :seed=N                 the seed of the probability's draws (0)
  e.g. hdd-7200,fail=write:range=1G+64M:after=100   nvme,fail=flush:times=1
The daemon counts what it failed, by kind (failed_writes, failed_reads, failed_flushes in
the result's device activity).
";

/// What a power cut does and its options, for `list-devices`.
const CUTS_HELP: &str = "
Power cuts (CUT options of the commands that cut power, e.g. after=2s,keep=prefix,seed=7):
the drive loses its volatile cache, answers every later request with EIO at once, and nothing
more reaches the media: the image holds what had drained plus what the cut kept. A
battery-backed cache (nvcache=) survives whole; a lying drive (flush=ignore) loses what its
acknowledged flushes never drained.
  after=DURATION          cut once DURATION has passed since the cut was armed
  flushes=N | writes=N    cut as the Nth flush (or write) since then is acknowledged
  random=DURATION         cut at a moment drawn from the seed within DURATION
  seed=N                  the seed of every draw (0)
  keep=none               what survives of the writes in the cache: nothing (the default);
  keep=prefix             the first k in the order the drive drains (k drawn from 0..=n);
  keep=any                any k of them (drives drain out of order);
  keep=torn               a prefix, then one write torn between two sectors (sector=)
";

/// `70 MB/s`: decimal, as datasheets print rates.
fn rate_text(rate: Option<u64>) -> String {
    match rate {
        None => "unlimited".into(),
        Some(r) if r % MB == 0 => format!("{} MB/s", r / MB),
        Some(r) => format!("{:.1} MB/s", r as f64 / MB as f64),
    }
}

fn ms(d: Duration) -> String {
    let v = d.as_secs_f64() * 1e3;
    if v >= 1.0 {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
            + " ms"
    } else {
        format!("{:.0} us", d.as_secs_f64() * 1e6)
    }
}

/// One line of figures: `5400 rpm, seek 1.1-21 ms (average 11.7 ms) over 320 GB, ...`.
pub(crate) fn describe(f: &DiskFigures) -> String {
    let mut out = match &f.mechanics {
        Mechanics::Rotating(s) => format!(
            "{} rpm ({} a rotation), seek {} to {} (average {}) over {} GB",
            s.rpm,
            ms(Duration::from_nanos(rotation_ns(s.rpm))),
            ms(s.settle),
            ms(s.full_stroke),
            ms(s.average_seek()),
            s.capacity_bytes / 1_000_000_000
        ),
        Mechanics::Solid { per_request } => format!("no seeks, {} per request", ms(*per_request)),
    };
    let _ = write!(out, ", media {}", rate_text(f.media_bytes_per_s));
    let _ = write!(
        out,
        ", cache {}",
        match f.cache_bytes {
            0 => "none (write-through)".to_string(),
            bytes if f.cache_segments > 0 => format!(
                "{} {} in {} segments",
                human_size(bytes),
                f.cache_kind(),
                f.cache_segments
            ),
            bytes => format!("{} {}", human_size(bytes), f.cache_kind()),
        }
    );
    let _ = write!(out, ", bus {}", rate_text(f.bus_bytes_per_s));
    match f.latency_p99 {
        Some(p99) => {
            let _ = write!(
                out,
                ", latency median {} p99 {} (log-normal)",
                ms(f.command_latency),
                ms(p99)
            );
        }
        None if !f.command_latency.is_zero() => {
            let _ = write!(out, ", latency {}", ms(f.command_latency));
        }
        None => {}
    }
    if f.ignores_flushes {
        out.push_str(", flushes ignored (a lying drive)");
    } else if !f.flush_cost.is_zero() {
        let _ = write!(out, ", flush {}", ms(f.flush_cost));
    }
    if f.sector_bytes != 512 {
        let _ = write!(out, ", sector {}", human_size(f.sector_bytes));
    }
    for rule in &f.faults {
        let _ = write!(out, ", {rule}");
    }
    out
}

/// What `fsynclab list-devices` and `--device help` print: every profile with its
/// figures and their sources, the keys, and the daemon's ceiling.
pub(crate) fn listing() -> String {
    let mut out = String::from(
        "Device profiles (--device PROFILE[,KEY=VALUE...] or --device KEY=VALUE,...):\n\n\
         host      the image is a file on the host filesystem: flushes cost what the host disk charges\n\
         ram       the image is on a private tmpfs: flushes cost nothing (the lower bound)\n\n",
    );
    for p in named() {
        let f = (p.figures)();
        let _ = writeln!(out, "{:<9} {}", p.name, p.summary);
        let _ = writeln!(out, "          {}", describe(&f));
        for (figure, source) in p.sources {
            let _ = writeln!(out, "          - {figure}: {source}");
        }
        out.push('\n');
    }
    out.push_str("Keys (after a profile name to change it, or alone from a seekless, cacheless disk):\n");
    for (key, what) in KEYS {
        let _ = writeln!(out, "  {key:<17} {what}");
    }
    out.push_str(
        "\nExamples: hdd-5400,cache=0 (no write cache)   flush=20ms,write=80M (fixed flush cost, paced writes)\n\
         \x20         rpm=7200,rate=120M,seek=15ms,cache=16M   hdd-7200,flush=ignore (a lying drive)\n\n",
    );
    out.push_str("Valid ranges, derived from real drives (a figure outside them is refused):\n");
    for (keys, valid, why) in RANGES {
        let _ = writeln!(out, "  {keys:<23} {valid}\n  {:<23} ({why})", "");
    }
    out.push_str(FAULTS_HELP);
    out.push_str(CUTS_HELP);
    out.push('\n');
    out.push_str(CEILING_NOTE);
    out.push('\n');
    out
}

/// What `--device help` and the docs say about the daemon's own ceiling (measured with the
/// commands in docs/disk-model.md).
const CEILING_NOTE: &str = "\
The daemon's ceiling, measured on a 2-vCPU VM shared with other work (docs/disk-model.md):
with no media cost to emulate (--device cache=64M) it serves 1 MiB direct writes at 3.4-3.6
GB/s and 4 KiB direct writes one at a time at 30-32K/s (a FUSE round trip of about 30 us).
So nvme's 1500 MB/s is reached (1430 MB/s measured with fio) but not its 50K writes/s at
queue depth 1 (24-27K/s). Through the page cache (`load stream`) the daemon's three copies
of every byte share the two CPUs with the writer's own copy: nvme sustained 1000-1320 MiB/s
where --device ram sustained 790-1900 MiB/s in the same rounds.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_names_every_profile_and_source() {
        let text = listing();
        for p in named() {
            assert!(text.contains(p.name), "{}", p.name);
            for (figure, _) in p.sources {
                assert!(text.contains(figure), "{figure}");
            }
        }
        assert!(
            text.contains("5400 rpm (11.11 ms a rotation), seek 1.1 ms to 21 ms (average 11.71 ms) over 320 GB"),
            "{text}"
        );
    }
}
