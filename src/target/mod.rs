//! Where the I/O goes. For now a directory the user names with `--dir`: fsynclab works only
//! inside a new subdirectory of it ([`WorkDir`]) and removes that afterwards.

pub mod workdir;

pub use workdir::WorkDir;
