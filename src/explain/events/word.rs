//! A short piece of text that events print from a small set — a task's state (`S`, `D`,
//! `R+`), a block request's flags (`WS`, `FF`), a bdi (`7:0`), a writeback reason, a system
//! call's name — interned: an event carries it as two bytes instead of a heap string (a
//! trace holds a million events and a few dozen such words).
//!
//! Words are interned once each in a table for the life of the process and leaked, as task
//! names are ([`crate::measure::TaskName`]); the table holds at most 65,535 and a later word
//! shares the last slot's, never panics.

use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroU16;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Every word interned so far: slot `i` is `Word(i + 1)`, and each word's slot.
struct Table {
    words: Vec<&'static str>,
    slots: HashMap<&'static str, u16>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

/// An interned word.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Word(NonZeroU16);

impl Word {
    pub(crate) fn new(word: &str) -> Word {
        let mut guard = TABLE.lock().unwrap_or_else(PoisonError::into_inner);
        let table = guard.get_or_insert_with(|| Table {
            words: Vec::new(),
            slots: HashMap::new(),
        });
        let slot = match table.slots.get(word) {
            Some(&slot) => slot,
            None if table.words.len() < usize::from(u16::MAX) => {
                let leaked: &'static str = Box::leak(word.to_string().into_boxed_str());
                table.words.push(leaked);
                let slot = (table.words.len() - 1) as u16;
                table.slots.insert(leaked, slot);
                slot
            }
            None => u16::MAX - 1,
        };
        // `slot` is below u16::MAX, so slot + 1 fits and is not zero.
        Word(NonZeroU16::new(slot + 1).unwrap_or(NonZeroU16::MIN))
    }

    pub(crate) fn as_str(self) -> &'static str {
        let guard = TABLE.lock().unwrap_or_else(PoisonError::into_inner);
        guard
            .as_ref()
            .and_then(|t| t.words.get(usize::from(self.0.get()) - 1))
            .copied()
            .unwrap_or("?")
    }
}

impl From<&str> for Word {
    fn from(word: &str) -> Word {
        Word::new(word)
    }
}

impl PartialEq<&str> for Word {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Display for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl Serialize for Word {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Word {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Word, D::Error> {
        let word = std::borrow::Cow::<str>::deserialize(de)?;
        Ok(Word::new(&word))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_intern_once_and_read_back() {
        let (d, s) = (Word::new("D"), Word::new("R+"));
        assert_eq!(d, Word::new("D"));
        assert_ne!(d, s);
        assert_eq!((d.as_str(), s.to_string().as_str()), ("D", "R+"));
        assert!(s == "R+");
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, "\"R+\"");
        assert_eq!(serde_json::from_str::<Word>(&json).unwrap(), s);
    }
}
