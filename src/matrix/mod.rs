//! A matrix as data: one scenario crossed over axes of configurations and repeated
//! ([`plan`], read from the command line or a TOML file, [`file`]), the claims that share
//! its runs between processes ([`claim`]), and seed 002's table of its results ([`table`]).
//! Where its runs are made (here, or by a farm's scheduler) is `farm`; the `fsynclab matrix`
//! command is in `commands::matrix`.

pub(crate) mod claim;
pub(crate) mod file;
pub(crate) mod plan;
pub(crate) mod table;

/// What the ids of `fsynclab reproduce`'s matrices begin with (`reproduce3`).
pub(crate) const REPRODUCTION_ID_PREFIX: &str = "reproduce";

/// `m3`, or a reproduction's `reproduce3-001` and `reproduce3-003-bdi`: the forms of matrix
/// ids the store gives out.
pub(crate) fn is_matrix_id(text: &str) -> bool {
    let numbered = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    if let Some(n) = text.strip_prefix('m') {
        return numbered(n);
    }
    text.strip_prefix(REPRODUCTION_ID_PREFIX)
        .and_then(|rest| rest.split_once('-'))
        .is_some_and(|(n, group)| {
            numbered(n)
                && !group.is_empty()
                && group
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}
