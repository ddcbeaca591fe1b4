//! Throughput per second of the run, so the background writer's rate can be set beside the
//! moments the foreground stalled.

use serde::{Deserialize, Serialize};

/// What was done in one second of the run (second `second` covers [second, second+1) s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SecondBucket {
    pub second: u64,
    pub bytes: u64,
    pub ops: u64,
}

#[derive(Clone, Debug, Default)]
pub struct PerSecond {
    buckets: Vec<SecondBucket>,
}

impl PerSecond {
    pub fn new() -> PerSecond {
        PerSecond::default()
    }

    /// Adds one operation of `bytes` that ended at `t_ns` since the run start.
    #[inline]
    pub fn add(&mut self, t_ns: u64, bytes: u64) {
        let second = t_ns / 1_000_000_000;
        while self.buckets.len() as u64 <= second {
            let next = self.buckets.len() as u64;
            self.buckets.push(SecondBucket {
                second: next,
                ..SecondBucket::default()
            });
        }
        let b = &mut self.buckets[second as usize];
        b.bytes += bytes;
        b.ops += 1;
    }

    pub fn into_buckets(self) -> Vec<SecondBucket> {
        self.buckets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_by_second_with_gaps_filled() {
        let mut p = PerSecond::new();
        p.add(10, 4096);
        p.add(999_999_999, 4096);
        p.add(2_500_000_000, 1 << 20);
        let b = p.into_buckets();
        assert_eq!(b.len(), 3);
        assert_eq!(
            b[0],
            SecondBucket {
                second: 0,
                bytes: 8192,
                ops: 2
            }
        );
        assert_eq!(
            b[1],
            SecondBucket {
                second: 1,
                bytes: 0,
                ops: 0
            }
        );
        assert_eq!(b[2].bytes, 1 << 20);
    }
}
