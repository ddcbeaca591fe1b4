//! A table of short texts interned for the life of the process, each named by a two-byte
//! slot: what lets a sample carry its task's name ([`super::TaskName`]) and a traced event
//! its words (`crate::explain::events::Word`) in two bytes instead of a heap string. A run
//! sees a few dozen distinct texts; texts are leaked, each once, and live as long as what
//! names them. The table holds at most 65,534; a later text shares the last slot's, never
//! panics.

use std::collections::HashMap;
use std::num::NonZeroU16;
use std::sync::{Mutex, PoisonError};

/// One table of interned texts (a `static` each: task names, event words).
pub(crate) struct Interner {
    table: Mutex<Option<Table>>,
}

/// Slot `i` is named `i + 1`; each text's slot.
struct Table {
    texts: Vec<&'static str>,
    slots: HashMap<&'static str, u16>,
}

impl Interner {
    pub(crate) const fn new() -> Interner {
        Interner {
            table: Mutex::new(None),
        }
    }

    /// The name of `text`'s slot, interning it the first time.
    pub(crate) fn intern(&self, text: &str) -> NonZeroU16 {
        let mut guard = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let table = guard.get_or_insert_with(|| Table {
            texts: Vec::new(),
            slots: HashMap::new(),
        });
        let slot = match table.slots.get(text) {
            Some(&slot) => slot,
            None if table.texts.len() < usize::from(u16::MAX - 1) => {
                let leaked: &'static str = Box::leak(text.to_string().into_boxed_str());
                table.texts.push(leaked);
                let slot = (table.texts.len() - 1) as u16;
                table.slots.insert(leaked, slot);
                slot
            }
            None => u16::MAX - 2,
        };
        // `slot` is below u16::MAX - 1, so slot + 1 fits and is not zero.
        NonZeroU16::new(slot + 1).unwrap_or(NonZeroU16::MIN)
    }

    /// The text of slot `name` (`?` for a slot this table never gave).
    pub(crate) fn text(&self, name: NonZeroU16) -> &'static str {
        let guard = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        guard
            .as_ref()
            .and_then(|t| t.texts.get(usize::from(name.get()) - 1))
            .copied()
            .unwrap_or("?")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_intern_once_per_table_and_read_back() {
        static A: Interner = Interner::new();
        static B: Interner = Interner::new();
        let (x, y) = (A.intern("postgres"), A.intern("pgbench"));
        assert_eq!(x, A.intern("postgres"));
        assert_ne!(x, y);
        assert_eq!((A.text(x), A.text(y)), ("postgres", "pgbench"));
        assert_eq!(B.intern("D"), x, "each table numbers its own slots");
        assert_eq!(B.text(NonZeroU16::new(9).unwrap()), "?");
    }
}
