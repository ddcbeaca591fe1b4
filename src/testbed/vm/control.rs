//! The emulated disk's controls across the VM's wall. A `--kernel` guest's disk is emulated
//! by the host's fsynclab, so a run inside that cuts its power, injects faults or turns the
//! power on again for its recovery asks the host: one line of JSON a [`Request`], one line a
//! [`Reply`], over a virtio-serial port named [`PORT_NAME`] whose other end is a UNIX socket
//! the host listens on ([`Server`]). Every request is short (a wait for a cut is asked again
//! and again), so one port serves all of a run's threads in turn.

use std::fs::File;
use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixListener;
#[cfg(test)]
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context as _, Result};

use super::super::device::fuse::Remote;
pub use super::super::device::fuse::{Reply, Request};
use super::super::device::{DeviceControl, Keep};

/// The guest's name of the port (`/sys/class/virtio-ports/vportNpM/name`).
pub const PORT_NAME: &str = "fsynclab.control";

/// How often the host's server looks whether it is asked to stop.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// The longest path a UNIX socket's address holds (sun_path, its NUL included).
const SOCKET_PATH_MAX: usize = 107;

/// On the host: answers the guest's requests on the device `control` serves, until dropped.
/// `remake` makes a new filesystem on the media (a power cut's next cycle), called with the
/// power off.
pub struct Server {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens at `path` (QEMU connects to it as it starts) and serves in a thread of its own.
    pub fn listen(
        path: &Path,
        control: DeviceControl,
        remake: impl Fn() -> Result<()> + Send + 'static,
    ) -> Result<Server> {
        if path.as_os_str().len() > SOCKET_PATH_MAX {
            anyhow::bail!(
                "the guest's control socket {} is longer than a UNIX socket's {SOCKET_PATH_MAX} bytes: give a shorter --backing",
                path.display()
            );
        }
        let listener = UnixListener::bind(path).with_context(|| format!("cannot listen at {}", path.display()))?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("fsynclab-guest-control".into())
                .spawn(move || serve(&listener, &stop, &control, &remake))
                .context("cannot start the guest's control thread")?
        };
        Ok(Server {
            path: path.to_path_buf(),
            stop,
            thread: Some(thread),
        })
    }

    /// The socket QEMU's port connects to.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The server's thread: waits for QEMU's connection, then answers each line until the
/// guest's end closes it or the server is dropped.
fn serve(listener: &UnixListener, stop: &AtomicBool, control: &DeviceControl, remake: &dyn Fn() -> Result<()>) {
    let stream = loop {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        match listener.accept() {
            Ok((stream, _)) => break stream,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(LOOK_EVERY),
            Err(e) => {
                note!("fsynclab: the guest's control socket failed: {e}");
                return;
            }
        }
    };
    if stream.set_nonblocking(false).is_err() || stream.set_read_timeout(Some(LOOK_EVERY)).is_err() {
        return;
    }
    let Ok(mut out) = stream.try_clone() else { return };
    let mut lines = BufReader::new(stream);
    let mut line = String::new();
    while !stop.load(Ordering::SeqCst) {
        match lines.read_line(&mut line) {
            Ok(0) => return,
            Ok(_) if line.ends_with('\n') => {
                let reply = match serde_json::from_str::<Request>(line.trim()) {
                    Ok(request) => answer(control, request, remake),
                    Err(e) => Reply::Refused(format!("not a request: {e}")),
                };
                line.clear();
                let mut text = serde_json::to_string(&reply).unwrap_or_default();
                text.push('\n');
                if out.write_all(text.as_bytes()).is_err() {
                    return;
                }
            }
            // A part of a line, or the timeout: the rest comes later.
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

/// A request made on the host's device: a fresh drive's power comes on only once the new
/// filesystem is on its media (made with the power off: nothing else writes there then).
fn answer(control: &DeviceControl, request: Request, remake: &dyn Fn() -> Result<()>) -> Reply {
    if request == (Request::PowerOn { fresh: true }) {
        control.cut_power(Keep::Nothing, 0);
        if let Err(e) = remake() {
            return Reply::Refused(format!("cannot make the next filesystem: {e:#}"));
        }
    }
    control.answer(request)
}

/// In the guest: the port to the host's device, if the host gave one.
pub struct Port {
    io: Mutex<(BufReader<File>, File)>,
}

impl Port {
    /// Opens the port named [`PORT_NAME`] (loading virtio_console where it is a module);
    /// None when the guest has none.
    pub fn open() -> Result<Option<Port>> {
        let _ = crate::testbed::command::output("modprobe", &["virtio_console"]);
        let Some(device) = find_port(Path::new("/sys/class/virtio-ports")) else {
            return Ok(None);
        };
        let file = File::options()
            .read(true)
            .write(true)
            .open(&device)
            .with_context(|| format!("cannot open the host's control port {}", device.display()))?;
        let reader = BufReader::new(file.try_clone()?);
        Ok(Some(Port {
            io: Mutex::new((reader, file)),
        }))
    }
}

/// The device file of the port named [`PORT_NAME`] among `class`'s (`vport1p1`, made in
/// /dev by devtmpfs).
fn find_port(class: &Path) -> Option<PathBuf> {
    std::fs::read_dir(class).ok()?.flatten().find_map(|e| {
        let name = std::fs::read_to_string(e.path().join("name")).ok()?;
        (name.trim() == PORT_NAME).then(|| Path::new("/dev").join(e.file_name()))
    })
}

impl Remote for Port {
    fn ask(&self, request: &Request) -> Option<Reply> {
        let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
        let (reader, writer) = &mut *io;
        ask_over(reader, writer, request)
    }
}

/// One request written as a line and its reply read back.
fn ask_over(reader: &mut impl std::io::BufRead, writer: &mut impl std::io::Write, request: &Request) -> Option<Reply> {
    let mut text = serde_json::to_string(request).ok()?;
    text.push('\n');
    writer.write_all(text.as_bytes()).ok()?;
    writer.flush().ok()?;
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    serde_json::from_str(line.trim()).ok()
}

/// For the tests: a guest's end of the channel over a plain UNIX socket.
#[cfg(test)]
struct SocketPort {
    io: Mutex<(BufReader<UnixStream>, UnixStream)>,
}

#[cfg(test)]
impl Remote for SocketPort {
    fn ask(&self, request: &Request) -> Option<Reply> {
        let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
        let (reader, writer) = &mut *io;
        ask_over(reader, writer, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_are_one_line_of_json_each() {
        let request = Request::CutPower {
            keep: Keep::Prefix,
            seed: 7,
        };
        let text = serde_json::to_string(&request).unwrap();
        assert!(!text.contains('\n'), "{text}");
        assert_eq!(serde_json::from_str::<Request>(&text).unwrap(), request);
        let reply = Reply::Clock(1.5);
        assert_eq!(
            serde_json::from_str::<Reply>(&serde_json::to_string(&reply).unwrap()).unwrap(),
            reply
        );
    }

    #[test]
    fn the_port_is_found_by_its_name() {
        let dir = tempfile::tempdir().unwrap();
        for (port, name) in [("vport0p1", "org.qemu.guest_agent"), ("vport1p1", PORT_NAME)] {
            std::fs::create_dir(dir.path().join(port)).unwrap();
            std::fs::write(dir.path().join(port).join("name"), format!("{name}\n")).unwrap();
        }
        assert_eq!(find_port(dir.path()), Some(PathBuf::from("/dev/vport1p1")));
        assert_eq!(find_port(&dir.path().join("none")), None);
    }

    /// A remote handle's requests reach the server and its replies come back; a device that
    /// is gone is said to be gone, and a request after the server is dropped gets nothing.
    #[test]
    fn a_remote_handle_asks_the_server_and_hears_its_reply() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("control.sock");
        let remade = Arc::new(AtomicBool::new(false));
        let server = {
            let remade = remade.clone();
            // A handle whose device is gone: every request but a fresh power-on is Gone.
            let gone = DeviceControl::remote(Arc::new(Nothing));
            Server::listen(&path, gone, move || {
                remade.store(true, Ordering::SeqCst);
                Ok(())
            })
            .unwrap()
        };
        let stream = UnixStream::connect(server.path()).unwrap();
        let port = SocketPort {
            io: Mutex::new((BufReader::new(stream.try_clone().unwrap()), stream)),
        };
        let control = DeviceControl::remote(Arc::new(port));
        assert_eq!(control.clock_s(), None);
        assert!(!control.arm_cut(crate::testbed::device::CutPlan {
            trigger: crate::testbed::device::CutTrigger::Now,
            keep: Keep::Nothing,
            seed: 1
        }));
        assert!(!control.power_on(true));
        assert!(
            remade.load(Ordering::SeqCst),
            "a fresh power-on makes the filesystem first"
        );
        let err = control.set_faults("fail=write").unwrap_err().0;
        assert!(err.contains("gone"), "{err}");
        drop(server);
        assert!(!path.exists(), "the socket is removed");
        assert_eq!(control.power_cut(), None);
    }

    /// A device that is never there.
    struct Nothing;

    impl Remote for Nothing {
        fn ask(&self, _: &Request) -> Option<Reply> {
            None
        }
    }
}
