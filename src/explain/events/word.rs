//! A short piece of text that events print from a small set — a task's state (`S`, `D`,
//! `R+`), a block request's flags (`WS`, `FF`), a bdi (`7:0`), a writeback reason, a system
//! call's name — interned: an event carries it as two bytes instead of a heap string (a
//! trace holds a million events and a few dozen such words).
//!
//! Words are interned once each for the life of the process, in a table of their own made
//! as task names' is ([`crate::measure::interner`]).

use std::fmt;
use std::num::NonZeroU16;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::measure::interner::Interner;

/// Every word interned so far.
static WORDS: Interner = Interner::new();

/// An interned word.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Word(NonZeroU16);

impl Word {
    pub(crate) fn new(word: &str) -> Word {
        Word(WORDS.intern(word))
    }

    pub(crate) fn as_str(self) -> &'static str {
        WORDS.text(self.0)
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
