//! Thin, checked wrappers over the Linux system calls fsynclab times.
//!
//! Each returns `io::Result` so that the caller records an error (EIO, ENOSPC, ...) as a
//! result instead of ignoring it. Nothing here retries or hides a failure, except that a
//! short write is continued until the whole buffer is written, as a real writer would.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

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
        // SAFETY: the pointer and length describe `rest`, a live borrowed slice.
        let n = unsafe {
            if dsync {
                let iov = libc::iovec {
                    iov_base: rest.as_ptr() as *mut libc::c_void,
                    iov_len: rest.len(),
                };
                libc::pwritev2(file.as_raw_fd(), &iov, 1, at, libc::RWF_DSYNC)
            } else {
                libc::pwrite(file.as_raw_fd(), rest.as_ptr() as *const libc::c_void, rest.len(), at)
            }
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "write returned 0"));
        }
        done += n as usize;
    }
    Ok(())
}

pub fn fsync(file: &File) -> io::Result<()> {
    // SAFETY: plain syscall on an open descriptor.
    check(unsafe { libc::fsync(file.as_raw_fd()) })
}

pub fn fdatasync(file: &File) -> io::Result<()> {
    // SAFETY: plain syscall on an open descriptor.
    check(unsafe { libc::fdatasync(file.as_raw_fd()) })
}

/// `sync_file_range(2)` with WAIT_BEFORE|WRITE|WAIT_AFTER: writes and waits for the data of
/// the range, but commits no metadata and issues no device cache flush.
pub fn sync_file_range(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: plain syscall on an open descriptor.
    check(unsafe { libc::sync_file_range(file.as_raw_fd(), offset as libc::off64_t, len as libc::off64_t, flags) })
}

/// `syncfs(2)`: flushes the whole filesystem that holds `file`.
pub fn syncfs(file: &File) -> io::Result<()> {
    // SAFETY: plain syscall on an open descriptor.
    check(unsafe { libc::syncfs(file.as_raw_fd()) })
}

/// Space of the filesystem holding `path`, from `statvfs(3)`.
#[derive(Clone, Copy, Debug)]
pub struct FsSpace {
    /// Bytes an unprivileged user may still allocate.
    pub available: u64,
    pub total: u64,
}

pub fn fs_space(path: &Path) -> io::Result<FsSpace> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path has a NUL byte"))?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string and `st` a writable statvfs.
    check(unsafe { libc::statvfs(c.as_ptr(), &mut st) })?;
    Ok(FsSpace {
        available: st.f_bavail as u64 * st.f_frsize as u64,
        total: st.f_blocks as u64 * st.f_frsize as u64,
    })
}

/// Whether the calling process may write into `path` (`access(2)` with W_OK|X_OK).
pub fn writable(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid C string.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// The symbolic name of an I/O error's errno (`EIO`, `ENOSPC`), or its text when it has none.
pub fn error_name(err: &io::Error) -> String {
    let name = match err.raw_os_error() {
        Some(libc::EIO) => "EIO",
        Some(libc::ENOSPC) => "ENOSPC",
        Some(libc::EDQUOT) => "EDQUOT",
        Some(libc::EROFS) => "EROFS",
        Some(libc::EINVAL) => "EINVAL",
        Some(libc::EBADF) => "EBADF",
        Some(libc::EFBIG) => "EFBIG",
        Some(libc::EINTR) => "EINTR",
        Some(libc::EAGAIN) => "EAGAIN",
        Some(libc::EOPNOTSUPP) => "EOPNOTSUPP",
        Some(libc::EPERM) => "EPERM",
        Some(libc::EACCES) => "EACCES",
        _ => return err.to_string(),
    };
    name.to_string()
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

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
