//! The records the BPF program and user space share (watch_records.h), as this side expects them:
//! a `#[repr(C)]` mirror of each C struct, its fields named as C names them, and from the
//! mirrors the table of every field's offset and size (`offset_of!`, `size_of`), the one place
//! this side states the layouts. The tests beside it (layout_tests.rs) check the table against
//! the BTF of the object build.rs compiled, so that a field moved, resized, added, removed or
//! renamed on one side only fails; and check that the readers and the writer of the records
//! (record.rs, latency_record.rs, settings.rs, histogram.rs), which go field by field, read and write at the
//! mirrors' offsets, and that the numbers they use are watch_records.h's (`KIND_*`...).
//!
//! Below them, the other sides read the same way: a struct as the object's BTF lays it out, and
//! as watch_records.h's text does by C's rules (for a struct BTF leaves out), with the header's
//! numbers. Test code: the readers do not read through the mirrors, the tests tie them together.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::mem::{offset_of, size_of};

use libbpf_rs::btf::types::{Array, Int, MemberAttr, Struct};
use libbpf_rs::btf::{Btf, BtfKind, BtfType};
use libbpf_rs::HasSize as _;

use super::kind::{SyncKind, OTHER_CALLS, WRITE_CALLS};
use super::record::TOP_SLEEPS;
use super::OBJECT;

/// TASK_COMM_LEN: a task's name, NUL-terminated unless all 16 bytes are used.
pub(super) type Comm = [u8; 16];
/// STACK_DEPTH: frames of a kernel stack kept per long sleep.
pub(super) const STACK_DEPTH: usize = 20;
/// SHORT_WAKERS: tasks whose short sleeps are kept apart per call.
pub(super) const SHORT_WAKERS: usize = 4;
/// KINDS: the sync system calls, whose numbers `struct config` carries.
pub(super) const KINDS: usize = SyncKind::SYSCALLS.len();

/// `struct config`: what the program is told (settings.rs writes it).
#[repr(C)]
pub(super) struct Config {
    pub(super) filter: u32,
    pub(super) follow_tid: u32,
    pub(super) nr: [i64; KINDS],
    pub(super) report_threshold_ns: u64,
    pub(super) stack_threshold_ns: u64,
    pub(super) comm: Comm,
    pub(super) every_call: u32,
    pub(super) writes: u32,
    pub(super) write_nr: [i64; WRITE_CALLS.len()],
    pub(super) write_tid: u32,
    pub(super) write_pad: u32,
    pub(super) write_comm: Comm,
    pub(super) other_nr: [i64; OTHER_CALLS.len()],
    pub(super) other_fd: u32,
    pub(super) sync_hooks: u32,
    pub(super) split_by_counters: u32,
    pub(super) split_pad: u32,
}

/// `struct latency_record`: one call in the ring `every` (latency_record.rs reads it).
#[repr(C)]
pub(super) struct LatencyRecord {
    pub(super) start_ns: u64,
    pub(super) latency_ns: u64,
    pub(super) pid: u32,
    pub(super) tid: u32,
    pub(super) kind: u32,
    pub(super) ret: i32,
    pub(super) comm: Comm,
}

/// `struct totals`: what the devices and journals finished.
#[repr(C)]
pub(super) struct Totals {
    pub(super) flushes: u64,
    pub(super) flush_ns: u64,
    pub(super) write_bytes: u64,
    pub(super) commits: u64,
    pub(super) commit_ns: u64,
}

/// `struct sleep`: a long sleep of a call, with its stack.
#[repr(C)]
pub(super) struct Sleep {
    pub(super) ns: u64,
    pub(super) runnable_ns: u64,
    pub(super) waker_pid: u32,
    pub(super) stack_bytes: u32,
    pub(super) waker_comm: Comm,
    pub(super) stack: [u64; STACK_DEPTH],
    pub(super) sleeps: u32,
    pub(super) pad: u32,
}

/// `struct short_wake`: a call's short sleeps that one task (or completion) ended.
#[repr(C)]
pub(super) struct ShortWake {
    pub(super) ns: u64,
    pub(super) sleeps: u32,
    pub(super) waker_pid: u32,
    pub(super) waker_comm: Comm,
    pub(super) completed: u32,
    pub(super) completed_dev: u32,
    pub(super) waker_work: u64,
}

/// `struct commit`: a journal commit (device << 32 | transaction), when it started and ended.
#[repr(C)]
pub(super) struct Commit {
    pub(super) dev_tid: u64,
    pub(super) start_ns: u64,
    pub(super) end_ns: u64,
}

/// `struct throttle`: the dirty throttling a call met.
#[repr(C)]
pub(super) struct Throttle {
    pub(super) dirty_pages: u64,
    pub(super) limit_pages: u64,
    pub(super) pause_jiffies: i64,
    pub(super) pauses: u32,
    pub(super) pad: u32,
}

/// `struct fs_journal`: xfs's log forces and btrfs's commits in a call.
#[repr(C)]
pub(super) struct FsJournal {
    pub(super) xfs_seq: u64,
    pub(super) btrfs_transaction: u64,
    pub(super) xfs_forces: u32,
    pub(super) btrfs_commits: u32,
}

/// `struct call`: a sync call in progress, then its record in the ring `events` (record.rs
/// reads it; the program's own bookkeeping in it is not read).
#[repr(C)]
pub(super) struct Call {
    pub(super) start_ns: u64,
    pub(super) latency_ns: u64,
    pub(super) pid: u32,
    pub(super) tid: u32,
    pub(super) kind: u32,
    pub(super) fd: i32,
    pub(super) ret: i64,
    pub(super) comm: Comm,
    pub(super) runqueue_ns: u64,
    pub(super) short_sleep_ns: u64,
    pub(super) other_sleep_ns: u64,
    pub(super) short_sleeps: u32,
    pub(super) long_sleeps: u32,
    pub(super) at_entry: Totals,
    pub(super) off_ns: u64,
    pub(super) woken_ns: u64,
    pub(super) off_state: u32,
    pub(super) waker_pid: u32,
    pub(super) waker_comm: Comm,
    pub(super) woken_by: u32,
    pub(super) woken_by_dev: u32,
    pub(super) waker_work: u64,
    pub(super) short_wakers: [ShortWake; SHORT_WAKERS],
    pub(super) sleeps: [Sleep; TOP_SLEEPS],
    pub(super) last_commit: Commit,
    pub(super) ino: u64,
    pub(super) dev: u32,
    pub(super) disk: u32,
    pub(super) throttle: Throttle,
    pub(super) fs_journal: FsJournal,
    pub(super) flusher_reasons: u32,
    pub(super) woken_into: u16,
    pub(super) woken_early: u16,
    pub(super) seen_file: u64,
    pub(super) seen_inode: u64,
    pub(super) seen_ino: u64,
    pub(super) seen_dev: u32,
    pub(super) seen_disk: u32,
    pub(super) seen_sb: u64,
    pub(super) entry_runtime_base: u64,
    pub(super) entry_run_delay: u64,
    pub(super) counted: u32,
    pub(super) counted_pad: u32,
}

/// `struct latency_key`: the key of the `latency` histogram map (histogram.rs reads it).
#[repr(C)]
pub(super) struct LatencyKey {
    pub(super) pid: u32,
    pub(super) kind: u16,
    pub(super) bucket: u16,
}

/// A field of a shared struct as this side lays it out, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Field {
    pub(super) name: &'static str,
    pub(super) offset: usize,
    pub(super) size: usize,
}

/// A shared struct as this side lays it out: its C name, its size and its fields in order.
#[derive(Debug)]
pub(super) struct Layout {
    pub(super) c_name: &'static str,
    pub(super) size: usize,
    pub(super) fields: Vec<Field>,
}

/// The size of the field `field` picks out of a `T` (the closure is never called).
fn size_of_field<T, F>(_field: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// The layout of mirror `$mirror` (C's `struct $c_name`), every one of its fields listed.
macro_rules! layout {
    ($mirror:ident as $c_name:literal { $($field:ident),* $(,)? }) => {{
        // Each field named once, and none left out: a struct literal that names them all.
        fn _every_field_is_listed(m: $mirror) -> $mirror {
            let $mirror { $($field),* } = m;
            $mirror { $($field),* }
        }
        Layout {
            c_name: $c_name,
            size: size_of::<$mirror>(),
            fields: vec![$(Field {
                name: stringify!($field),
                offset: offset_of!($mirror, $field),
                size: size_of_field(|m: &$mirror| &m.$field),
            }),*],
        }
    }};
}

/// Every struct the program and user space share, as this side lays it out.
pub(super) fn layouts() -> Vec<Layout> {
    vec![
        layout!(Config as "config" {
            filter, follow_tid, nr, report_threshold_ns, stack_threshold_ns, comm, every_call,
            writes, write_nr, write_tid, write_pad, write_comm, other_nr, other_fd, sync_hooks,
            split_by_counters, split_pad,
        }),
        layout!(LatencyRecord as "latency_record" { start_ns, latency_ns, pid, tid, kind, ret, comm }),
        layout!(Totals as "totals" { flushes, flush_ns, write_bytes, commits, commit_ns }),
        layout!(Sleep as "sleep" {
            ns, runnable_ns, waker_pid, stack_bytes, waker_comm, stack, sleeps, pad,
        }),
        layout!(ShortWake as "short_wake" {
            ns, sleeps, waker_pid, waker_comm, completed, completed_dev, waker_work,
        }),
        layout!(Commit as "commit" { dev_tid, start_ns, end_ns }),
        layout!(Throttle as "throttle" { dirty_pages, limit_pages, pause_jiffies, pauses, pad }),
        layout!(FsJournal as "fs_journal" { xfs_seq, btrfs_transaction, xfs_forces, btrfs_commits }),
        layout!(Call as "call" {
            start_ns, latency_ns, pid, tid, kind, fd, ret, comm, runqueue_ns, short_sleep_ns,
            other_sleep_ns, short_sleeps, long_sleeps, at_entry, off_ns, woken_ns, off_state,
            waker_pid, waker_comm, woken_by, woken_by_dev, waker_work, short_wakers, sleeps,
            last_commit, ino, dev, disk, throttle, fs_journal, flusher_reasons, woken_into,
            woken_early, seen_file, seen_inode, seen_ino, seen_dev, seen_disk, seen_sb,
            entry_runtime_base, entry_run_delay, counted, counted_pad,
        }),
        layout!(LatencyKey as "latency_key" { pid, kind, bucket }),
    ]
}

// The other sides: the object's BTF, and watch_records.h's text.

/// watch_records.h, whose `#define`s name the numbers the program and user space share.
pub(super) const WATCH_RECORDS_H: &str = include_str!("watch_records.h");

/// The structs the object's BTF does not describe, each checked against watch_records.h's text
/// instead. BTF describes the object's maps, global variables and functions, not a function's
/// locals: the program fills a `struct latency_record` on its stack and copies it into the
/// ring `every`, which has no value type, so clang leaves it out.
pub(super) const NOT_IN_BTF: [&str; 1] = ["latency_record"];

/// The `#define NAME NUMBER`s of watch_records.h (decimal or hex; other macros left out).
pub(super) fn defines() -> BTreeMap<&'static str, u64> {
    WATCH_RECORDS_H
        .lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let (name, value) = (words.next()?, words.next()?);
            let number = match value.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok()?,
                None => value.parse().ok()?,
            };
            Some((name, number))
        })
        .collect()
}

/// watch_records.h's number `name`.
pub(super) fn define(name: &str) -> u64 {
    *defines()
        .get(name)
        .unwrap_or_else(|| panic!("no #define {name} in watch_records.h"))
}

/// The BTF of the object build.rs compiled and the binary embeds.
pub(super) fn object_btf() -> Btf<'static> {
    assert!(
        !OBJECT.is_empty(),
        "this build has no BPF object (build.rs found no clang; scripts/setup.sh installs it): \
         the layouts cannot be checked against it"
    );
    Btf::from_raw("watch", OBJECT)
        .expect("the BPF object opens")
        .expect("the BPF object carries BTF (built with -g)")
}

/// The bytes a value of BTF type `ty` takes.
pub(super) fn size_in_btf(ty: BtfType<'_>) -> usize {
    let ty = ty.skip_mods_and_typedefs();
    match ty.kind() {
        BtfKind::Int => Int::try_from(ty).expect("an int").size(),
        BtfKind::Struct => Struct::try_from(ty).expect("a struct").size(),
        BtfKind::Array => {
            let array = Array::try_from(ty).expect("an array");
            array.capacity() * size_in_btf(array.contained_type())
        }
        other => panic!("a field of BTF kind {other:?}: not one the shared structs use"),
    }
}

/// A struct's size and its fields in order, each its name, offset and size in bytes.
pub(super) type Laid = (usize, Vec<(String, usize, usize)>);

/// What `layout` says of its struct, as [`Laid`].
pub(super) fn laid(layout: &Layout) -> Laid {
    let fields = layout.fields.iter().map(|f| (f.name.to_string(), f.offset, f.size));
    (layout.size, fields.collect())
}

/// Struct `name` as the object's BTF lays it out.
pub(super) fn btf_layout(btf: &Btf<'_>, name: &str) -> Option<Laid> {
    let found = btf
        .type_by_kind::<Struct<'_>>()
        .find(|s| s.name() == Some(OsStr::new(name)))?;
    let fields = found
        .iter()
        .map(|member| {
            let MemberAttr::Normal { offset } = member.attr else {
                panic!("struct {name} has a bit field, which a mirror cannot lay out");
            };
            assert_eq!(offset % 8, 0, "struct {name}: a field off a byte boundary");
            let ty = btf.type_by_id::<BtfType<'_>>(member.ty).expect("the field's type");
            let name = member.name.and_then(OsStr::to_str).expect("a named field");
            (name.to_string(), offset as usize / 8, size_in_btf(ty))
        })
        .collect();
    Some((found.size(), fields))
}

/// `text` without its `/* ... */` comments.
pub(super) fn without_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        rest = rest[start..].split_once("*/").map_or("", |(_, after)| after);
    }
    out + rest
}

/// Struct `name` laid out from watch_records.h's text by C's rules for the types it uses (each
/// field at the next multiple of its type's alignment, which is its size for a number and
/// its largest field's for a struct; the struct a multiple of its own).
pub(super) fn header_layout(name: &str) -> Laid {
    header_struct(name).0
}

/// [`header_layout`] of struct `name`, and its alignment.
pub(super) fn header_struct(name: &str) -> (Laid, usize) {
    let header = without_comments(WATCH_RECORDS_H);
    let start = header
        .find(&format!("struct {name} {{"))
        .unwrap_or_else(|| panic!("no struct {name} in watch_records.h"));
    let body = &header[start..];
    let body = &body[body.find('{').unwrap_or(0) + 1..body.find("};").unwrap_or(body.len())];
    let (mut at, mut align, mut fields) = (0usize, 1usize, Vec::new());
    for declaration in body.split(';') {
        let Some((ty, declarator)) = declaration.trim().rsplit_once(char::is_whitespace) else {
            continue;
        };
        let (size, alignment) = match ty.trim() {
            "u64" | "s64" => (8, 8),
            "u32" | "s32" => (4, 4),
            "u16" => (2, 2),
            "u8" | "char" => (1, 1),
            other => match other.strip_prefix("struct ") {
                Some(inner) => {
                    let ((size, _), alignment) = header_struct(inner.trim());
                    (size, alignment)
                }
                None => panic!("struct {name}: a field of type {other}, unknown here"),
            },
        };
        let (field, count) = match declarator.split_once('[') {
            Some((field, len)) => {
                let len = len.trim_end_matches(']');
                let count = len.parse().unwrap_or_else(|_| define(len) as usize);
                (field, count)
            }
            None => (declarator, 1),
        };
        at = at.next_multiple_of(alignment);
        fields.push((field.to_string(), at, size * count));
        at += size * count;
        align = align.max(alignment);
    }
    ((at.next_multiple_of(align), fields), align)
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
