//! A process in /proc, per Documentation/filesystems/proc.rst, section 1.1 (tables 1-1 and
//! 1-4): its name, state, parent and start time from `/proc/PID/stat`, its command line and
//! its name. The one place that reads `/proc/PID/stat`.

/// The fields of `/proc/PID/stat` fsynclab reads: name (field 2), state (3), parent (4).
/// The others are ignored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub name: String,
    /// `R`, `S`, `D`, `Z` (a zombie: it has ended and waits to be reaped)...
    pub state: char,
    pub ppid: u32,
}

impl std::str::FromStr for Stat {
    type Err = ();

    /// `PID (NAME) STATE PPID ...`: the name may hold spaces and parentheses, so it ends at
    /// the last `)`.
    fn from_str(stat: &str) -> Result<Stat, ()> {
        let (head, tail) = stat.rsplit_once(')').ok_or(())?;
        let name = head.split_once('(').ok_or(())?.1.to_string();
        let mut fields = tail.split_whitespace();
        let state = fields.next().and_then(|s| s.chars().next()).ok_or(())?;
        let ppid = fields.next().and_then(|p| p.parse().ok()).ok_or(())?;
        Ok(Stat { name, state, ppid })
    }
}

/// `/proc/PID/stat` of process `pid`, parsed; None when it is gone.
pub(crate) fn stat(pid: u32) -> Option<Stat> {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?.parse().ok()
}

/// The start time of a process, from its `/proc/PID/stat`: field 22, in clock ticks after
/// boot. The fields are counted after the `)` that ends the command name (field 2), which
/// may itself hold spaces and parentheses; every other field is ignored.
pub(crate) fn parse_start_time(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // After the name come field 3 (state) onwards: starttime is field 22.
    after_name.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// The start time of process `pid` (see [`parse_start_time`]); None when it is gone. With
/// the pid, it tells a process from a later one that reuses the pid.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    parse_start_time(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The arguments of process `pid` (`/proc/PID/cmdline`, NUL-separated); None when it is
/// gone, empty for a kernel thread.
pub(crate) fn cmdline(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

/// The name of process or thread `pid` (`/proc/PID/comm`, at most 15 bytes).
pub(crate) fn comm(pid: u32) -> Option<String> {
    Some(
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .ok()?
            .trim_end()
            .to_string(),
    )
}

/// The pids in /proc now.
pub(crate) fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = include_str!("../../tests/fixtures/proc-pid-stat.txt");

    #[test]
    fn name_state_and_parent_are_read_past_a_name_with_parentheses() {
        let stat: Stat = STAT.parse().expect("the fixture parses");
        assert_eq!(stat.name, "a b) c");
        assert_eq!(
            "12 (x) Z 1 2".parse(),
            Ok(Stat {
                name: "x".into(),
                state: 'Z',
                ppid: 1
            })
        );
        assert!("12 x R".parse::<Stat>().is_err());
    }

    #[test]
    fn start_time_is_field_22_after_the_name() {
        // The fixture's command name is `a b) c`: spaces and a parenthesis.
        assert_eq!(parse_start_time(STAT), Some(428674));
        assert_eq!(parse_start_time("12 (x) R 1 2"), None);
    }

    #[test]
    fn start_time_tells_processes_apart() {
        let mine = start_time(std::process::id()).expect("own start time");
        assert!(start_time(1).is_some_and(|init| init <= mine));
        assert_eq!(start_time(u32::MAX - 1), None);
    }

    #[test]
    fn this_process_by_its_files() {
        let me = std::process::id();
        assert!(pids().contains(&me));
        assert!(cmdline(me).is_some_and(|args| !args.is_empty()));
        assert!(comm(me).is_some_and(|c| !c.is_empty() && c.len() <= 15));
    }
}
