//! The name of the task (process or thread) that made a call, as the kernel names it
//! (`comm`, at most 15 bytes): what a traced command's calls are grouped by
//! (`fsynclab exec --explain`).
//!
//! A sample carries it as two bytes: names are interned once each for the life of the
//! process ([`super::interner`]), so that a sample stays 40 bytes with or without one.

use std::fmt;
use std::num::NonZeroU16;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::interner::Interner;

/// Every name interned so far. Names are leaked: each one once, and they live as long as
/// the samples that name them.
static NAMES: Interner = Interner::new();

/// An interned task name.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TaskName(NonZeroU16);

impl TaskName {
    /// The name `name` (cut to 15 bytes at a character boundary, as the kernel keeps it).
    pub fn new(name: &str) -> TaskName {
        let mut end = name.len().min(15);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        TaskName(NAMES.intern(&name[..end]))
    }

    pub fn as_str(self) -> &'static str {
        NAMES.text(self.0)
    }
}

impl From<&str> for TaskName {
    fn from(name: &str) -> TaskName {
        TaskName::new(name)
    }
}

impl fmt::Display for TaskName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for TaskName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl Serialize for TaskName {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskName {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<TaskName, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(de)?;
        Ok(TaskName::new(&name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_intern_once_and_read_back() {
        let a = TaskName::new("postgres");
        let b = TaskName::new("pgbench");
        assert_eq!(a, TaskName::new("postgres"));
        assert_ne!(a, b);
        assert_eq!((a.as_str(), b.to_string().as_str()), ("postgres", "pgbench"));
        assert_eq!(TaskName::new("a-very-long-thread-name").as_str(), "a-very-long-thr");
        assert_eq!(TaskName::new("ééééééééé").as_str(), "ééééééé");
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, "\"postgres\"");
        assert_eq!(serde_json::from_str::<TaskName>(&json).unwrap(), a);
    }
}
