//! The guest kernel's console: QEMU writes it to a file of the run's, apart from the
//! command's stderr, so that a guest that crashed can say how ([`console_last_words`]).

use std::path::Path;

/// The guest's console its kernel's messages are written to: the virtio console
/// [`qemu_opts`] adds. It comes up when virtio_console does (a module in Debian's kernels,
/// loaded by virtme-ng's initramfs about 5 s into a TCG boot), and shows the kernel's
/// messages from then on.
pub(super) const CONSOLE_PORT: &str = "hvc0";

/// Whether `line` is the kernel's console: stamped with the time since boot, `[   12.345678]`.
fn is_console(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"[") else {
        return false;
    };
    let stamp: Vec<u8> = rest.iter().copied().take_while(|&b| b != b']').collect();
    let digits = String::from_utf8_lossy(&stamp);
    let digits = digits.trim_start();
    stamp.len() < rest.len() && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// What a guest's console said last that tells how it ended: its kernel's panic line (or a
/// BUG or Oops) when there is one, after what the oops that led to it said first (its BUG,
/// Oops or fault line, and where: its RIP), else its last line; without the time stamps.
pub fn console_last_words(log: &Path) -> Option<String> {
    let text = std::fs::read(log).ok()?;
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().filter(|l| is_console(l.as_bytes())).collect();
    let words = |line: &str| line.split_once(']').map_or(line, |(_, w)| w).trim().to_string();
    let telling = ["Kernel panic", "BUG:", "Oops", "general protection fault"];
    let Some(at) = lines.iter().rposition(|l| telling.iter().any(|t| l.contains(t))) else {
        return lines.last().map(|l| words(l));
    };
    let mut said = Vec::new();
    if lines[at].contains("Kernel panic") {
        // The oops a panic follows is printed just before it (with its registers and call
        // trace, some tens of lines).
        let oops = &lines[at.saturating_sub(80)..at];
        // Its first line: a BUG or fault names the cause, where an Oops line follows it.
        let says = |words: &[&str]| oops.iter().rposition(|l| words.iter().any(|t| l.contains(t)));
        let first = says(&["BUG:", "general protection fault"]).or_else(|| says(&["Oops"]));
        if let Some(first) = first {
            said.push(words(oops[first]));
            if let Some(rip) = oops[first..].iter().find(|l| l.contains("RIP:")) {
                said.push(words(rip));
            }
        }
    }
    said.push(words(lines[at]));
    Some(said.join(" | ").chars().take(400).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_consoles_panic_is_its_last_word() {
        assert!(is_console(b"[   19.874069] kvm: exiting hardware virtualization"));
        assert!(is_console(b"[12345.1] x"));
        assert!(!is_console(b"ERR"));
        assert!(!is_console(b"[1/20] reproduce1-004 #1: run 1"));
        assert!(!is_console(b"[ ] nothing"));
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("console.log");
        // As the guest's console writes it: lines ended by \r\n.
        std::fs::write(
            &log,
            "[    1.0] Linux version 6.12\r\n\
             [    9.5] Kernel panic - not syncing: Attempted to kill init!\r\n\
             [    9.6] Kernel Offset: disabled\r\n",
        )
        .unwrap();
        assert_eq!(
            console_last_words(&log).as_deref(),
            Some("Kernel panic - not syncing: Attempted to kill init!")
        );
        // A panic after an oops: what the oops said first, and where, then the panic.
        std::fs::write(
            &log,
            "[    5.0] BUG: kernel NULL pointer dereference, address: 0000000000000008\n\
             [    5.0] #PF: supervisor read access in kernel mode\n\
             [    5.0] Oops: 0000 [#1] PREEMPT SMP NOPTI\n\
             [    5.0] RIP: 0010:blk_mq_start_request+0x12/0x40\n\
             [    5.0] Call Trace:\n\
             [    5.1] Kernel panic - not syncing: Fatal exception in interrupt\n\
             [    5.1] Kernel Offset: disabled\n",
        )
        .unwrap();
        assert_eq!(
            console_last_words(&log).as_deref(),
            Some("BUG: kernel NULL pointer dereference, address: 0000000000000008 | RIP: 0010:blk_mq_start_request+0x12/0x40 | Kernel panic - not syncing: Fatal exception in interrupt")
        );
        std::fs::write(&log, "[    1.0] Linux version 6.12\n[    2.0] reboot: Power down\n").unwrap();
        assert_eq!(console_last_words(&log).as_deref(), Some("reboot: Power down"));
    }
}
