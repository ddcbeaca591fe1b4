//! Thin, checked wrappers over the Linux system calls fsynclab times.
//!
//! Each returns `io::Result` so that the caller records an error (EIO, ENOSPC, ...) as a
//! result instead of ignoring it. Nothing here retries or hides a failure, except that a
//! short write is continued until the whole buffer is written, as a real writer would.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use nix::sys::statvfs::{FsFlags, Statvfs};
use nix::unistd::AccessFlags;

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `pwrite(2)` of the whole buffer at `offset`, or with `RWF_DSYNC` when `dsync` is set
/// (`pwritev2(2)`), continuing short writes.
pub fn pwrite_all(file: &File, buf: &[u8], offset: u64, dsync: bool) -> io::Result<()> {
    let mut done = 0usize;
    while done < buf.len() {
        let rest = &buf[done..];
        let at = (offset + done as u64) as libc::off_t;
        let written = if dsync {
            let iov = libc::iovec {
                iov_base: rest.as_ptr() as *mut libc::c_void,
                iov_len: rest.len(),
            };
            // SAFETY: `iov` describes `rest`, a live borrowed slice, which pwritev2 only
            // reads. nix has no pwritev2 (a write with flags such as RWF_DSYNC).
            let n = unsafe { libc::pwritev2(file.as_raw_fd(), &iov, 1, at, libc::RWF_DSYNC) };
            usize::try_from(n).map_err(|_| io::Error::last_os_error())
        } else {
            nix::sys::uio::pwrite(file, rest, at).map_err(io::Error::from)
        };
        let n = match written {
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
            Ok(0) => return Err(Errno::NOT_OS.to_io_error()),
            Ok(n) => n,
        };
        done += n;
    }
    Ok(())
}

pub fn fsync(file: &File) -> io::Result<()> {
    Ok(nix::unistd::fsync(file)?)
}

pub fn fdatasync(file: &File) -> io::Result<()> {
    Ok(nix::unistd::fdatasync(file)?)
}

/// `sync_file_range(2)` with WAIT_BEFORE|WRITE|WAIT_AFTER: writes and waits for the data of
/// the range, but commits no metadata and issues no device cache flush.
pub fn sync_file_range(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: a system call on an open descriptor, passing no memory; nix has no
    // sync_file_range.
    check(unsafe { libc::sync_file_range(file.as_raw_fd(), offset as libc::off64_t, len as libc::off64_t, flags) })
}

/// `close(2)`, checked: the last chance for a filesystem to report a write error, which
/// dropping a `File` would ignore.
pub fn close(file: File) -> io::Result<()> {
    Ok(nix::unistd::close(file)?)
}

/// `syncfs(2)`: flushes the whole filesystem that holds `file`.
pub fn syncfs(file: &File) -> io::Result<()> {
    Ok(nix::unistd::syncfs(file)?)
}

/// Space of the filesystem holding `path`, from `statvfs(3)`.
#[derive(Clone, Copy, Debug)]
pub struct FsSpace {
    /// Bytes an unprivileged user may still allocate.
    pub available: u64,
    pub total: u64,
}

/// `statvfs(3)` of the filesystem holding `path`.
fn statvfs(path: &Path) -> io::Result<Statvfs> {
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "path has a NUL byte"));
    }
    Ok(nix::sys::statvfs::statvfs(path)?)
}

pub fn fs_space(path: &Path) -> io::Result<FsSpace> {
    let st = statvfs(path)?;
    Ok(FsSpace {
        available: st.blocks_available() as u64 * st.fragment_size() as u64,
        total: st.blocks() as u64 * st.fragment_size() as u64,
    })
}

/// Whether the calling process may write into `path` (`access(2)` with W_OK|X_OK, which
/// also fails on a read-only mount, for root too).
pub fn writable(path: &Path) -> bool {
    nix::unistd::access(path, AccessFlags::W_OK | AccessFlags::X_OK).is_ok()
}

/// Why `path` cannot be written into, in words: a read-only filesystem (also for root,
/// whom `access(2)` would otherwise let through in words that blame the user), or the
/// user's permissions.
pub fn why_not_writable(path: &Path) -> &'static str {
    let read_only = statvfs(path).is_ok_and(|st| st.flags().contains(FsFlags::ST_RDONLY));
    if read_only {
        "it is on a read-only mount"
    } else {
        "this user may not write there"
    }
}

/// Why a call failed: the errno the kernel returned. Results name it symbolically (`EIO`,
/// `ENOSPC`); [`Errno::NOT_OS`] stands for the one failure that has no errno, a write that
/// returned 0 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

/// The errnos a storage call can return, by name (errno(3)).
const ERRNO_NAMES: [(i32, &str); 22] = [
    (libc::EPERM, "EPERM"),
    (libc::ENOENT, "ENOENT"),
    (libc::EINTR, "EINTR"),
    (libc::EIO, "EIO"),
    (libc::ENXIO, "ENXIO"),
    (libc::EBADF, "EBADF"),
    (libc::EAGAIN, "EAGAIN"),
    (libc::ENOMEM, "ENOMEM"),
    (libc::EACCES, "EACCES"),
    (libc::EBUSY, "EBUSY"),
    (libc::EEXIST, "EEXIST"),
    (libc::ENODEV, "ENODEV"),
    (libc::EISDIR, "EISDIR"),
    (libc::EINVAL, "EINVAL"),
    (libc::EFBIG, "EFBIG"),
    (libc::ENOSPC, "ENOSPC"),
    (libc::EROFS, "EROFS"),
    (libc::EOPNOTSUPP, "EOPNOTSUPP"),
    (libc::EDQUOT, "EDQUOT"),
    (libc::ESTALE, "ESTALE"),
    (libc::ENOTCONN, "ENOTCONN"),
    (libc::EUCLEAN, "EUCLEAN"),
];

impl Errno {
    /// A write that returned 0: no errno, but not a success either.
    pub const NOT_OS: Errno = Errno(0);
    const NOT_OS_NAME: &'static str = "write returned 0";

    pub fn of(err: &io::Error) -> Errno {
        Errno(err.raw_os_error().unwrap_or(0))
    }

    /// `EIO`, `ENOSPC`, ...; `errno 123` for one without a name here.
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        if self == Errno::NOT_OS {
            return Errno::NOT_OS_NAME.into();
        }
        match ERRNO_NAMES.iter().find(|(n, _)| *n == self.0) {
            Some((_, name)) => (*name).into(),
            None => format!("errno {}", self.0).into(),
        }
    }

    pub fn from_name(name: &str) -> Option<Errno> {
        if name == Errno::NOT_OS_NAME {
            return Some(Errno::NOT_OS);
        }
        if let Some(n) = name.strip_prefix("errno ") {
            return n.parse().ok().map(Errno);
        }
        ERRNO_NAMES.iter().find(|(_, n)| *n == name).map(|(e, _)| Errno(*e))
    }

    /// The error again, for callers that pass it on (a follower of a group commit).
    pub fn to_io_error(self) -> io::Error {
        if self == Errno::NOT_OS {
            io::Error::new(io::ErrorKind::WriteZero, Errno::NOT_OS_NAME)
        } else {
            io::Error::from_raw_os_error(self.0)
        }
    }
}

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl serde::Serialize for Errno {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Errno {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Errno, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Errno::from_name(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown error name {name}")))
    }
}

/// A heap buffer aligned for O_DIRECT (4096 bytes covers every logical block size in use).
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
    layout: std::alloc::Layout,
}

// SAFETY: the buffer is uniquely owned memory, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub const ALIGN: usize = 4096;

    /// A buffer of `len` bytes (rounded up to a whole block for the allocation) filled with `byte`.
    pub fn filled(len: usize, byte: u8) -> AlignedBuf {
        let cap = len.max(1).div_ceil(Self::ALIGN) * Self::ALIGN;
        let layout = std::alloc::Layout::from_size_align(cap, Self::ALIGN).expect("valid layout");
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: ptr points to `cap` writable bytes.
        unsafe { std::ptr::write_bytes(ptr, byte, cap) };
        AlignedBuf { ptr, len, layout }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr points to at least `len` initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `filled` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// The calling thread's id (`gettid(2)`), as the kernel names it in trace events.
pub fn current_tid() -> u32 {
    nix::unistd::gettid().as_raw() as u32
}

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// What is not mounted of what a command measuring this machine reads the kernel through, in
/// one line saying what to do: /proc (processes, mounts, sysctls, kernel symbols), then /sys
/// (the block devices, the kernel's BTF, and tracefs's mount point). A chroot or container
/// without them otherwise reads as a kernel without BTF, tracefs or memory (issue 63).
pub fn missing_kernel_mount() -> Option<String> {
    if !Path::new("/proc/self/stat").exists() {
        return Some(
            "/proc is not mounted here, and fsynclab reads processes, mounts and the kernel's settings there: \
             mount it (mount -t proc proc /proc) and run again"
                .into(),
        );
    }
    if !Path::new("/sys/kernel").is_dir() {
        return Some(
            "/sys is not mounted here, and fsynclab finds tracefs, the kernel's BTF and the block devices there: \
             mount it (mount -t sysfs sysfs /sys) and run again"
                .into(),
        );
    }
    None
}
