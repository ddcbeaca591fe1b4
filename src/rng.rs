//! The one random generator: the background writer's offsets and the bootstrap's resamples
//! both need a stream fixed by its seed and this code alone, on every machine and version.

/// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): small, fast, and the same sequence for the same seed everywhere — so a
/// random writer's offsets repeat from run to run, and a bootstrap interval printed today is
/// printed the same by any later version.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform index below `n` by Lemire's multiply-shift ("Fast random integer generation
    /// in an interval", ACM TOMACS 2019) without the rejection step: the bias is at most
    /// n / 2^64, far below anything a bootstrap of a few runs can show.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_the_reference_one() {
        // The reference implementation (Vigna's splitmix64.c) from state 0 starts with
        // 0xE220A8397B1DCDAF: a changed constant would change every interval and offset.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn below_stays_below() {
        let mut r = SplitMix64::new(7);
        assert!((0..10_000).all(|_| r.below(3) < 3));
    }
}
