//! Writing files out before a measurement: the prepare step of sysbench, fio's layout, the
//! seed programs' setup loops. One mechanism with one progress rate, used by every scenario
//! that needs allocated blocks to overwrite.
//!
//! Files are written in the size the measurement will write (its record or block size), not
//! in bigger chunks: the write size decides the size of the page-cache folios, and an
//! overwrite of a small record inside a large folio makes the next sync write back the whole
//! folio (measured in rndwr: 0.6x sysbench's requests/s with 1 MiB prepare writes).

use std::fs::File;
use std::path::Path;

use anyhow::{Context as _, Result};

use crate::observe::{Event, Observer, Unit};
use crate::stop::Stop;
use crate::sys;
use crate::units::Bytes;

/// Progress is reported each time this many more bytes are written.
const PROGRESS_EVERY: u64 = Bytes::MIB;

/// Fills one or more files under one progress phase.
pub(crate) struct Filler<'a> {
    stop: &'a Stop,
    observer: &'a mut dyn Observer,
    done: u64,
}

impl<'a> Filler<'a> {
    /// Starts the phase `name` of `total` bytes.
    pub(crate) fn new(name: &str, total: u64, stop: &'a Stop, observer: &'a mut dyn Observer) -> Filler<'a> {
        observer.event(Event::Phase {
            name,
            total: Some(total),
            unit: Unit::Bytes,
        });
        Filler {
            stop,
            observer,
            done: 0,
        }
    }

    /// Writes `len` bytes from offset 0 of `file` in `buf`-sized writes (the last one
    /// shorter), then fsyncs it when `sync` is set. Returns false, leaving the file short,
    /// when the stop was set first.
    pub(crate) fn fill(&mut self, file: &File, path: &Path, buf: &[u8], len: u64, sync: bool) -> Result<bool> {
        let mut offset = 0;
        while offset < len {
            if self.stop.is_set() {
                return Ok(false);
            }
            let n = (buf.len() as u64).min(len - offset);
            sys::pwrite_all(file, &buf[..n as usize], offset, false)
                .with_context(|| format!("cannot write out {}", path.display()))?;
            offset += n;
            let before = self.done;
            self.done += n;
            if before / PROGRESS_EVERY != self.done / PROGRESS_EVERY {
                self.observer.event(Event::Progress { done: self.done });
            }
        }
        if sync {
            sys::fsync(file).with_context(|| format!("fsync of {} failed", path.display()))?;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Count(u64, u64);
    impl Observer for Count {
        fn event(&mut self, e: Event<'_>) {
            if let Event::Progress { done } = e {
                self.0 += 1;
                self.1 = done;
            }
        }
    }

    #[test]
    fn fills_exactly_and_reports_each_mib() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let file = File::create(&path).unwrap();
        let mut count = Count::default();
        let stop = Stop::new();
        let mut filler = Filler::new("fill", 3 << 20, &stop, &mut count);
        assert!(filler.fill(&file, &path, &[7u8; 5000], 3 << 20, true).unwrap());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 3 << 20);
        assert_eq!((count.0, count.1), (3, 3 << 20));
    }

    #[test]
    fn stops_early_when_told() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let file = File::create(&path).unwrap();
        let stop = Stop::new();
        stop.set();
        let mut count = Count::default();
        let mut filler = Filler::new("fill", 1 << 20, &stop, &mut count);
        assert!(!filler.fill(&file, &path, &[7u8; 4096], 1 << 20, false).unwrap());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }
}
