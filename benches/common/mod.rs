//! What the overhead benches share: runs interleaved round by round, the order of the sides
//! rotating each round so that drift of the machine hits every side alike, on a quiet machine
//! and beside two CPU-burning processes (one per CPU of the project's VM); and the median
//! they report.

use std::process::{Child, Command};

/// The two conditions each round runs every side in, by the index [`interleaved`] gives.
pub const CONDITIONS: [&str; 2] = ["quiet", "2 CPU burners"];

/// The rounds to run: `FSYNCLAB_BENCH_ROUNDS`, else `default`.
pub fn rounds(default: usize) -> usize {
    std::env::var("FSYNCLAB_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// The middle value (the upper one of an even count), NaN when there is none; sorts `v`.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Calls `run(condition, side)` for each of `sides` sides in each condition of each round:
/// in round r the sides go r, r+1, ... (modulo `sides`); the burners run through a
/// condition's runs and stop before the next.
pub fn interleaved(rounds: usize, sides: usize, mut run: impl FnMut(usize, usize)) {
    for round in 0..rounds {
        for (condition, loaded) in [false, true].into_iter().enumerate() {
            let _burners = loaded.then(Burners::start);
            for k in 0..sides {
                run(condition, (round + k) % sides);
            }
        }
    }
}

/// Two processes that keep both CPUs of the VM busy until dropped.
struct Burners(Vec<Child>);

impl Burners {
    fn start() -> Burners {
        Burners(
            (0..2)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .expect("start a CPU burner")
                })
                .collect(),
        )
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
