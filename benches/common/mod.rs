//! What the overhead benches share: runs interleaved round by round, the order of the sides
//! changing each round so that drift of the machine, and what one run leaves to the next,
//! hit every side alike, on a quiet machine and beside two CPU-burning processes (one per
//! CPU of the project's VM); and the median they report.

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

/// Calls `run(condition, side)` for each of `sides` sides in each condition of each round,
/// in round r's order of [`balanced_orders`]; the burners run through a condition's runs and
/// stop before the next.
pub fn interleaved(rounds: usize, sides: usize, mut run: impl FnMut(usize, usize)) {
    let orders = balanced_orders(sides);
    for round in 0..rounds {
        for (condition, loaded) in [false, true].into_iter().enumerate() {
            let _burners = loaded.then(Burners::start);
            for &side in &orders[round % orders.len()] {
                run(condition, side);
            }
        }
    }
}

/// Orders of `n` sides in which each side runs right after each other side equally often
/// (once) over all the orders: a Williams design, n orders for an even n, 2n for an odd one.
/// Rotating one order (r, r+1, ...) would leave every side always after the same one, so
/// that what a run leaves behind (writeback, a cold cache) would always fall on that side.
/// The scripts' are the same (docs/bench/balanced_orders.py).
pub fn balanced_orders(n: usize) -> Vec<Vec<usize>> {
    // The first order 0, 1, n-1, 2, n-2, ...; the others add 1, 2, ... to it (modulo n).
    let first: Vec<usize> = (0..n)
        .map(|k| if k % 2 == 1 { k.div_ceil(2) } else { (n - k / 2) % n })
        .collect();
    let mut orders: Vec<Vec<usize>> = (0..n).map(|i| first.iter().map(|s| (s + i) % n).collect()).collect();
    if n % 2 == 1 {
        let reversed: Vec<Vec<usize>> = orders.iter().map(|o| o.iter().rev().copied().collect()).collect();
        orders.extend(reversed);
    }
    orders
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
