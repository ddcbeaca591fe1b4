//! A task that will not end: on a node that does not answer (slurmd killed, the machine
//! gone), a task sits RUNNING or COMPLETING until Slurm notices, after its SlurmdTimeout
//! (300 s by default). The follower finds such a task from what `squeue` and `sinfo` say
//! ([`stuck_because`]), names it with its node, and gives it up after [`STUCK_LIMIT`] (or
//! `--stuck-limit`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::client::{output, slurm};

/// How long a task may sit COMPLETING before its node is taken for gone: a node ends a task
/// in a second or two; one whose slurmd is dead never does, and Slurm itself notices only
/// after its SlurmdTimeout (300 s by default).
pub(super) const COMPLETING_LIMIT: Duration = Duration::from_secs(30);

/// How long fsynclab still waits for a task it found stuck before giving it up.
pub(super) const STUCK_LIMIT: Duration = Duration::from_secs(60);

/// A task fsynclab stopped waiting for: its id (`1234_5`), its node, and why.
pub(super) struct GivenUp {
    pub(super) task: String,
    pub(super) node: String,
    pub(super) why: String,
    /// The tasks it was given up with, when it was not given up on its own account (after
    /// [`STUCK_LIMIT`] or `--stuck-limit`) but because those ahead of it were.
    pub(super) with: Vec<String>,
}

/// How the following ended.
pub(super) struct Followed {
    /// The signal that stopped it.
    pub(super) signal: Option<i32>,
    pub(super) given_up: Vec<GivenUp>,
}

/// One task as `squeue -o '%i|%T|%N|%r'` lists it (a pending task has no node).
pub(super) struct Queued {
    pub(super) task: String,
    pub(super) state: String,
    pub(super) node: String,
    pub(super) reason: String,
}

pub(super) fn queued(text: &str) -> Vec<Queued> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.trim().splitn(4, '|').map(str::trim);
            let task = f.next().filter(|t| !t.is_empty())?.to_string();
            let state = f.next()?.to_string();
            let node = f.next().unwrap_or("").to_string();
            let reason = f.next().unwrap_or("").to_string();
            Some(Queued {
                task,
                state,
                node,
                reason,
            })
        })
        .collect()
}

/// The nodes that do not answer, with the state `sinfo` gives them: a state ending in `*`
/// (not responding), or down, drained, failing.
pub(super) fn unresponsive_nodes() -> Vec<(String, String)> {
    let Ok(text) = output(slurm("sinfo").args(["-h", "-N", "-o", "%N %T"])) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, state)| {
            let state = state.trim();
            state.ends_with('*') || ["down", "drain", "fail"].iter().any(|s| state.starts_with(s))
        })
        .map(|(node, state)| (node.to_string(), state.trim().to_string()))
        .collect()
}

/// Why a task looks stuck, if it does: on a node that does not answer, COMPLETING for too
/// long (`completing_for`), or held by Slurm.
pub(super) fn stuck_because(q: &Queued, completing_for: Duration, unresponsive: &[(String, String)]) -> Option<String> {
    let active = matches!(q.state.as_str(), "RUNNING" | "COMPLETING" | "CONFIGURING");
    if let Some((_, state)) = unresponsive.iter().find(|(n, _)| active && *n == q.node) {
        return Some(format!(
            "{} on {}, which does not respond (sinfo: {state})",
            q.state, q.node
        ));
    }
    if q.state == "COMPLETING" && completing_for >= COMPLETING_LIMIT {
        return Some(format!(
            "COMPLETING on {} for {} s: its node does not end it (is slurmd running there?)",
            q.node,
            completing_for.as_secs()
        ));
    }
    let reason = q.reason.to_ascii_lowercase();
    if q.state == "PENDING" && (reason.contains("held") || reason.contains("launch failed")) {
        return Some(format!("held by Slurm ({})", q.reason));
    }
    if q.state == "PENDING" && (reason.contains("reqnodenotavail") || reason.contains("nodedown")) {
        return Some(format!("waiting for a node that is down (Slurm: {})", q.reason));
    }
    None
}

/// The waiting tasks to give up with those given up already, once none of the others runs:
/// one kept behind them by the array's limit never starts, and one already found stuck
/// waiting for a node that is down would otherwise be waited for a whole [`STUCK_LIMIT`]
/// more. (On the test farm, about a minute after a task went to a dead node, Slurm turned the
/// reason of the task behind it from JobArrayTaskLimit to ReqNodeNotAvail: either way it is
/// given up with the first.)
/// `stuck` holds the tasks found stuck, with when and why.
pub(super) fn given_up_with(
    tasks: &[Queued],
    given_up: &[GivenUp],
    stuck: &BTreeMap<String, (Instant, String)>,
) -> Vec<GivenUp> {
    let blocking: Vec<&str> = given_up.iter().map(|g| g.task.as_str()).collect();
    let still_active = tasks
        .iter()
        .any(|q| q.state != "PENDING" && !blocking.contains(&q.task.as_str()));
    if still_active || blocking.is_empty() {
        return Vec::new();
    }
    tasks
        .iter()
        .filter(|q| q.state == "PENDING" && !blocking.contains(&q.task.as_str()))
        .filter_map(|q| {
            let why = if q.reason == "JobArrayTaskLimit" {
                "waiting behind the tasks ahead of it in its array (Slurm: JobArrayTaskLimit)".to_string()
            } else {
                stuck.get(&q.task)?.1.clone()
            };
            Some(GivenUp {
                task: q.task.clone(),
                node: String::new(),
                why,
                with: blocking.iter().map(|t| t.to_string()).collect(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(state: &str, node: &str, reason: &str) -> Queued {
        Queued {
            task: "12_3".into(),
            state: state.into(),
            node: node.into(),
            reason: reason.into(),
        }
    }

    /// Issue 24: a task on a dead node is found stuck (its node does not respond, or it sits
    /// COMPLETING), and a healthy one is not.
    #[test]
    fn a_task_on_a_node_that_does_not_respond_or_sits_completing_is_stuck() {
        let dead = vec![("n2".to_string(), "idle*".to_string())];
        let on_dead = stuck_because(&task("RUNNING", "n2", "None"), Duration::ZERO, &dead);
        assert!(
            on_dead
                .as_deref()
                .is_some_and(|w| w.contains("n2, which does not respond (sinfo: idle*)")),
            "{on_dead:?}"
        );
        assert_eq!(
            stuck_because(&task("RUNNING", "n1", "None"), Duration::ZERO, &dead),
            None
        );
        assert_eq!(
            stuck_because(&task("COMPLETING", "n1", "None"), Duration::from_secs(5), &[]),
            None
        );
        let completing = stuck_because(&task("COMPLETING", "n1", "None"), COMPLETING_LIMIT, &[]);
        assert!(completing.is_some_and(|w| w.starts_with("COMPLETING on n1 for 30 s")));
        assert!(stuck_because(&task("PENDING", "", "launch failed requeued held"), Duration::ZERO, &[]).is_some());
        assert_eq!(
            stuck_because(&task("PENDING", "", "Resources"), Duration::ZERO, &[]),
            None
        );
        let q = queued("12_3|COMPLETING|n2|None\n12_4|PENDING||Resources\n");
        assert_eq!(
            (q[0].node.as_str(), q[1].state.as_str(), q[1].reason.as_str()),
            ("n2", "PENDING", "Resources")
        );
        assert_eq!(q[1].node, "");
    }

    /// A task behind one given up is given up with it once nothing else runs: kept behind by
    /// the array's limit, or found stuck waiting for the dead node; not one that waits for
    /// resources, nor any while another task still runs.
    #[test]
    fn a_waiting_task_is_given_up_with_the_stuck_task_ahead_of_it() {
        let gone = vec![GivenUp {
            task: "12_0".into(),
            node: "n2".into(),
            why: "COMPLETING on n2".into(),
            with: Vec::new(),
        }];
        let down = "waiting for a node that is down (Slurm: ReqNodeNotAvail, UnavailableNodes:n2)";
        let stuck = BTreeMap::from([("12_2".to_string(), (Instant::now(), down.to_string()))]);
        let tasks = [
            task("COMPLETING", "n2", "None"),
            task("PENDING", "", "JobArrayTaskLimit"),
            task("PENDING", "", "ReqNodeNotAvail, UnavailableNodes:n2"),
            task("PENDING", "", "Resources"),
        ];
        let tasks: Vec<Queued> = tasks
            .into_iter()
            .enumerate()
            .map(|(i, q)| Queued {
                task: format!("12_{i}"),
                ..q
            })
            .collect();
        let with = given_up_with(&tasks, &gone, &stuck);
        let whys: Vec<(&str, &str, &[String])> = with
            .iter()
            .map(|g| (g.task.as_str(), g.why.as_str(), g.with.as_slice()))
            .collect();
        let ahead = ["12_0".to_string()];
        assert_eq!(
            whys,
            [
                (
                    "12_1",
                    "waiting behind the tasks ahead of it in its array (Slurm: JobArrayTaskLimit)",
                    &ahead[..]
                ),
                ("12_2", down, &ahead[..]),
            ]
        );
        assert!(given_up_with(&tasks, &[], &stuck).is_empty());
        let mut running = tasks;
        running[3].state = "RUNNING".into();
        assert!(given_up_with(&running, &gone, &stuck).is_empty());
    }
}
