//! Writing a file a user named — `-o`/`--output` of `export`, `report`, `run` and `exec`,
//! and the files of a suite's results directory — the way `cp` and `tee` users expect,
//! whatever the name leads to (issue 19):
//!
//! - nothing yet, or a regular file: the content goes to a temporary file beside it, which
//!   is synced and renamed into place, so that a reader sees the old file or the whole new
//!   one; a replaced file keeps its permissions (and, when root writes it, its owner); a new
//!   one is renamed without replacing whatever appeared there meanwhile;
//! - a symbolic link is followed, as `cp` and `tee` follow it: the regular file it leads to
//!   is replaced (the link stays a link), a device or FIFO it leads to is written into
//!   (`-o /dev/stdout`); a link that leads nowhere is refused rather than made to create
//!   its target somewhere the user did not name;
//! - a character device or a FIFO is written into, never replaced (`/dev/null`, a tty, a
//!   named pipe with its reader); a FIFO nobody reads is refused rather than waited on, and
//!   a device that takes no writes (`/dev/full`) by the check, before anything runs;
//! - a directory, a block device (a disk is never the place for a report) and a socket are
//!   refused, in one line;
//! - so are the results store in use and its `-wal` and `-shm` files, compared by device and
//!   inode, so that no spelling of the store's path (`./S.sqlite`, a link, a hard link) gets
//!   through: a report written there would replace every run.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::error::Usage;

/// What a name leads to, for writing.
#[derive(Debug)]
enum Dest {
    /// Nothing yet: a new file at this path.
    New(PathBuf),
    /// A regular file, the name's own or the one its links lead to, to be replaced.
    Replace(PathBuf, Metadata),
    /// A character device or a FIFO, to be written into.
    Into { fifo: bool },
}

/// Refuses, before anything runs, an output that cannot or must not be written: what the
/// module's list refuses, a directory that does not exist or cannot take a new file (issue
/// 8: found only after measuring, the measurement was lost). `store` is the results store
/// in use, if any.
pub(crate) fn check(path: &Path, store: Option<&Path>) -> Result<(), Usage> {
    check_option("--output", path, store)
}

/// [`check`] of a file another option names (`--emit`), which the refusal names.
pub(crate) fn check_option(flag: &str, path: &Path, store: Option<&Path>) -> Result<(), Usage> {
    match destination(flag, path, store)? {
        Dest::New(target) | Dest::Replace(target, _) => probe_dir(flag, path, &target),
        Dest::Into { fifo: false } => probe_device(flag, path),
        // Opening a FIFO is a reader's business (it would wait for one); written, it is.
        Dest::Into { fifo: true } => Ok(()),
    }
}

/// Checks that a character device takes writes, by opening it and writing nothing: a
/// zero-length write fails as a real one would where the device refuses every write
/// (`/dev/full`: ENOSPC), and does nothing elsewhere (`/dev/null`, a tty). Issue 24: `--emit
/// /dev/full` failed only after the matrix was stored.
fn probe_device(flag: &str, path: &Path) -> Result<(), Usage> {
    use std::io::Write as _;
    // O_NONBLOCK: a device whose open waits (a serial line without carrier) is not waited on.
    let mut device = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| refuse(flag, path, format!("cannot be opened for writing ({e}); name a file")))?;
    match device.write(&[]) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(()),
        Err(e) => Err(refuse(flag, path, format!("takes no writes ({e}); name a file"))),
    }
}

/// Writes the file at `path` as [the module](self) says, `fill` giving its content through
/// a buffer (serde issues one small write per token; a 7 MB result once took 3 million
/// write(2) calls, issue 8). `store` is the results store in use, never written over.
pub(crate) fn write(
    path: &Path,
    store: Option<&Path>,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<()> {
    write_option("--output", path, store, fill)
}

/// [`write`] of a file another option names (`--emit`), which a refusal names.
pub(crate) fn write_option(
    flag: &str,
    path: &Path,
    store: Option<&Path>,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<()> {
    match destination(flag, path, store)? {
        Dest::New(target) => replace(&target, None, fill),
        Dest::Replace(target, old) => replace(&target, Some(&old), fill),
        Dest::Into { fifo } => write_into(flag, path, fifo, fill),
    }
    .map_err(|e| match e.is::<Usage>() {
        true => e,
        false => e.context(format!("cannot write {}", path.display())),
    })
}

/// [`write`] of `value` as pretty JSON and a newline.
pub(crate) fn write_json<T: Serialize>(value: &T, path: &Path, store: Option<&Path>) -> Result<()> {
    write(path, store, |out| {
        serde_json::to_writer_pretty(&mut *out, value)?;
        Ok(out.write_all(b"\n")?)
    })
}

/// `flag` is the option that named `path` (`--output`, `--emit`).
fn refuse(flag: &str, path: &Path, why: impl std::fmt::Display) -> Usage {
    Usage(format!("{flag} {}: {why}", path.display()))
}

/// What `path` leads to, or why it must not be written.
fn destination(flag: &str, path: &Path, store: Option<&Path>) -> Result<Dest, Usage> {
    let md = match std::fs::metadata(path) {
        Ok(md) => md,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Ok(link) = std::fs::read_link(path) {
                return Err(refuse(
                    flag,
                    path,
                    format!(
                        "is a symbolic link to {}, which does not exist; name the file itself",
                        link.display()
                    ),
                ));
            }
            return Ok(Dest::New(path.to_path_buf()));
        }
        Err(e) => return Err(refuse(flag, path, format!("cannot use it ({e})"))),
    };
    if let Some(what) = store.and_then(|s| store_file_named(&md, s)) {
        return Err(refuse(
            flag,
            path,
            format!("is {what}; writing there would destroy its runs: name another file"),
        ));
    }
    let kind = md.file_type();
    if kind.is_dir() {
        let shown = path.display();
        return Err(refuse(
            flag,
            path,
            format!("is a directory; name a file, e.g. {shown}/result.json"),
        ));
    }
    if kind.is_file() {
        let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        let target = match is_link {
            true => {
                std::fs::canonicalize(path).map_err(|e| refuse(flag, path, format!("cannot follow the link ({e})")))?
            }
            false => path.to_path_buf(),
        };
        return Ok(Dest::Replace(target, md));
    }
    if kind.is_char_device() || kind.is_fifo() {
        return Ok(Dest::Into { fifo: kind.is_fifo() });
    }
    let what = match kind.is_block_device() {
        true => "a block device; fsynclab writes its output into files, never onto a disk",
        false => "a socket",
    };
    Err(refuse(flag, path, format!("is {what}: name a file")))
}

/// Which of the results store's files `md` is (the store, its -wal or -shm file), if any.
fn store_file_named(md: &Metadata, store: &Path) -> Option<String> {
    let shown = store.display();
    let with_suffix = |suffix: &str| {
        let mut p = store.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    };
    [
        (store.to_path_buf(), format!("the results store in use ({shown})")),
        (
            with_suffix("-wal"),
            format!("the write-ahead log of the results store {shown}"),
        ),
        (
            with_suffix("-shm"),
            format!("the shared memory file of the results store {shown}"),
        ),
    ]
    .into_iter()
    .find(|(p, _)| std::fs::metadata(p).is_ok_and(|s| s.dev() == md.dev() && s.ino() == md.ino()))
    .map(|(_, what)| what)
}

/// The directory a file at `target` is made in.
fn dir_of(target: &Path) -> &Path {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Checks that a file can be made beside `target` (where the new content is written
/// before the rename), by making one and removing it: permission bits do not tell
/// everything (root may write /proc's mode bits, not make a file there).
fn probe_dir(flag: &str, path: &Path, target: &Path) -> Result<(), Usage> {
    let dir = dir_of(target);
    if !dir.is_dir() {
        return Err(refuse(
            flag,
            path,
            format!("the directory {} does not exist; create it first", dir.display()),
        ));
    }
    if !crate::sys::writable(dir) {
        return Err(refuse(
            flag,
            path,
            format!(
                "cannot write into {} ({}); choose another place",
                dir.display(),
                crate::sys::why_not_writable(dir)
            ),
        ));
    }
    let probe = dir.join(format!(".fsynclab-output-check-{}", std::process::id()));
    match OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(refuse(
            flag,
            path,
            format!("cannot make a file in {} ({e}); choose another place", dir.display()),
        )),
    }
}

/// Writes into a character device or a FIFO, as `tee` would.
fn write_into(
    flag: &str,
    path: &Path,
    fifo: bool,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<()> {
    // Without O_NONBLOCK, opening a FIFO nobody reads waits for ever; with it, the open
    // fails at once (ENXIO) and says so.
    let flags = libc::O_NOCTTY | if fifo { libc::O_NONBLOCK } else { 0 };
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) if fifo => anyhow::Error::new(refuse(
                flag,
                path,
                "a FIFO that no process reads; start its reader first",
            )),
            _ => anyhow::Error::new(e),
        })?;
    if fifo {
        blocking(&file)?;
    }
    // Between the look and the open, the name may have become a regular file: written into
    // without truncation, it would keep the old file's tail.
    if file.metadata()?.file_type().is_file() {
        anyhow::bail!("it became a regular file while it was being opened; nothing was written");
    }
    let mut out = BufWriter::with_capacity(1 << 20, file);
    fill(&mut out)?;
    out.flush()?;
    Ok(())
}

/// Clears O_NONBLOCK, so that writes wait for a slow reader rather than fail with EAGAIN.
fn blocking(file: &File) -> std::io::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = OFlag::from_bits_retain(fcntl(file, FcntlArg::F_GETFL)?);
    fcntl(file, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK))?;
    Ok(())
}

/// Writes a temporary file beside `target`, syncs it and renames it into place: over the
/// regular file `old` was read from, or, for a new file, only if nothing appeared there.
fn replace(target: &Path, old: Option<&Metadata>, fill: impl FnOnce(&mut BufWriter<File>) -> Result<()>) -> Result<()> {
    let dir = dir_of(target);
    let name = target
        .file_name()
        .with_context(|| format!("{}: not a file name", target.display()))?
        .to_string_lossy()
        .into_owned();
    let (tmp, file) = temp_file(dir, &name)?;
    let run = || -> Result<()> {
        let mut out = BufWriter::with_capacity(1 << 20, file);
        fill(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        if let Some(old) = old {
            keep_owner_and_mode(&file, old)?;
        }
        file.sync_all()?;
        match old {
            Some(_) => std::fs::rename(&tmp, target)?,
            None => rename_noreplace(&tmp, target)?,
        }
        File::open(dir)?.sync_all()?;
        Ok(())
    };
    run().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// A new file beside the target, made with O_EXCL (so never through a link someone put at
/// its name), under a name no one else uses.
fn temp_file(dir: &Path, name: &str) -> Result<(PathBuf, File)> {
    let pid = std::process::id();
    for n in 0..100 {
        let tmp = dir.join(format!(".{name}.tmp-{pid}-{n}"));
        match OpenOptions::new().write(true).create_new(true).mode(0o666).open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e.into()),
        }
    }
    anyhow::bail!("no free name for a temporary file in {}", dir.display())
}

/// Gives the new file the permissions of the one it replaces, and its owner when root
/// writes it (as `cp` onto an existing file keeps both).
fn keep_owner_and_mode(file: &File, old: &Metadata) -> Result<()> {
    use nix::unistd::{fchown, Gid, Uid};
    if crate::sys::is_root() && (old.uid(), old.gid()) != (0, 0) {
        fchown(file, Some(Uid::from_raw(old.uid())), Some(Gid::from_raw(old.gid()))).map_err(std::io::Error::from)?;
    }
    file.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o7777))?;
    Ok(())
}

/// `renameat2(RENAME_NOREPLACE)`: EEXIST if something appeared at `to` since we looked. A
/// filesystem without the flag (EINVAL) gets a plain rename.
fn rename_noreplace(from: &Path, to: &Path) -> Result<()> {
    use nix::errno::Errno;
    use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
    match renameat2(AT_FDCWD, from, AT_FDCWD, to, RenameFlags::RENAME_NOREPLACE) {
        Ok(()) => Ok(()),
        Err(Errno::EINVAL) => Ok(std::fs::rename(from, to)?),
        Err(Errno::EEXIST) => {
            anyhow::bail!("something appeared at its name while it was written; nothing was replaced")
        }
        Err(e) => Err(std::io::Error::from(e).into()),
    }
}

#[cfg(test)]
mod tests;
