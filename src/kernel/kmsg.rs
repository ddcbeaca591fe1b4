//! `/dev/kmsg`, the kernel's log, per Documentation/ABI/testing/dev-kmsg: what the kernel
//! said about a device from some moment on (an I/O error, a journal aborted, a filesystem
//! shut down). Each `read(2)` returns one record, `PRIORITY,SEQUENCE,MICROSECONDS,FLAGS;
//! MESSAGE`, followed by dictionary lines that start with a space, which are ignored, as
//! are the priority, sequence and timestamp. Reading it needs CAP_SYSLOG where
//! `kernel.dmesg_restrict` is set: without it there is nothing to read, and that is no error.

use std::fs::File;
use std::io::{self, Read as _, Seek as _, SeekFrom};
use std::os::unix::fs::OpenOptionsExt as _;
use std::str::FromStr;

/// One record's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) message: String,
}

impl FromStr for Record {
    type Err = String;

    fn from_str(text: &str) -> Result<Record, String> {
        let first = text.lines().next().unwrap_or("");
        let (prefix, message) = first
            .split_once(';')
            .ok_or_else(|| format!("kmsg: no `;` after the prefix in {first:?}"))?;
        if prefix.split(',').count() < 4 {
            return Err(format!("kmsg: a prefix of four fields expected, got {prefix:?}"));
        }
        Ok(Record {
            message: message.to_string(),
        })
    }
}

/// The kernel's log from the moment it was opened.
pub(crate) struct KernelLog {
    file: Option<File>,
}

impl KernelLog {
    /// Opens the log at its end: only what the kernel says from now on is read.
    pub(crate) fn from_now() -> KernelLog {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .and_then(|mut f| f.seek(SeekFrom::End(0)).map(|_| f))
            .ok();
        KernelLog { file }
    }

    /// The messages since the last call (or the opening).
    pub(crate) fn read_new(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        let Some(file) = &mut self.file else { return out };
        let mut buf = vec![0u8; 8192];
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Ok(r) = String::from_utf8_lossy(&buf[..n]).parse::<Record>() {
                        out.push(r.message);
                    }
                }
                // Records overwritten before they were read: go on with the next.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        out
    }
}

/// Of `messages`, those that name block device `device` (`/dev/loop3` is named `loop3`,
/// and `loop31` is another), each once, in order, at most `most`.
pub(crate) fn naming(messages: Vec<String>, device: &str, most: usize) -> Vec<String> {
    let name = device.rsplit('/').next().unwrap_or(device);
    let names_it = |m: &str| {
        !name.is_empty()
            && m.match_indices(name)
                .any(|(at, _)| !m[at + name.len()..].starts_with(|c: char| c.is_ascii_digit()))
    };
    let mut out: Vec<String> = Vec::new();
    for m in messages.into_iter().filter(|m| names_it(m)) {
        if !out.contains(&m) && out.len() < most {
            out.push(m);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_kept_when_they_name_the_device_itself() {
        let said = [
            "I/O error, dev loop1, sector 17416 op 0x1:(WRITE)",
            "I/O error, dev loop12, sector 8 op 0x1:(WRITE)",
            "XFS (loop1): log I/O error -5",
            "I/O error, dev loop1, sector 17416 op 0x1:(WRITE)",
            "EXT4-fs (vda): something else",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            naming(said.clone(), "/dev/loop1", 10),
            [
                "I/O error, dev loop1, sector 17416 op 0x1:(WRITE)",
                "XFS (loop1): log I/O error -5"
            ]
        );
        assert_eq!(naming(said, "/dev/loop1", 1).len(), 1);
    }

    #[test]
    fn a_record_gives_its_message_without_the_dictionary() {
        let text = "3,1467,8123456789,-;I/O error, dev loop0, sector 17416 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0\n SUBSYSTEM=block\n DEVICE=b7:0\n";
        let r: Record = text.parse().unwrap();
        assert_eq!(
            r.message,
            "I/O error, dev loop0, sector 17416 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0"
        );
        assert!("no prefix".parse::<Record>().is_err());
        assert!("6,1;short prefix".parse::<Record>().is_err());
    }
}
