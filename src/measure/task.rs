//! The name of the task (process or thread) that made a call, as the kernel names it
//! (`comm`, at most 15 bytes): what a traced command's calls are grouped by
//! (`fsynclab exec --explain`).
//!
//! A sample carries it as two bytes: names are interned once each in a table for the life
//! of the process (a run sees a few dozen distinct names; the table holds at most 65,535
//! and a later name shares the last slot's, never panics), so that a sample stays 40 bytes
//! with or without one.

use std::fmt;
use std::num::NonZeroU16;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Every name interned so far; slot `i` is `TaskName(i + 1)`. Names are leaked: each one
/// once, and they live as long as the samples that name them.
static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

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
        let name = &name[..end];
        let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = match names.iter().position(|n| *n == name) {
            Some(i) => i,
            None if names.len() < usize::from(u16::MAX) => {
                names.push(Box::leak(name.to_string().into_boxed_str()));
                names.len() - 1
            }
            None => names.len() - 1,
        };
        // `slot` is below u16::MAX, so slot + 1 fits and is not zero.
        TaskName(NonZeroU16::new(slot as u16 + 1).unwrap_or(NonZeroU16::MIN))
    }

    pub fn as_str(self) -> &'static str {
        let names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
        names.get(usize::from(self.0.get()) - 1).copied().unwrap_or("?")
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
