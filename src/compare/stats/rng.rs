//! The random numbers of the bootstrap: a generator whose stream depends on nothing but its
//! seed and this code.

/// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): a 64-bit generator whose stream is fixed by its seed and by this code
/// alone, so a bootstrap interval printed today is printed the same by any later version.
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
