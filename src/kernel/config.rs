//! The kernel's build configuration (`CONFIG_...=value` lines): a kernel package's
//! `/boot/config-RELEASE`, or the running kernel's own `/proc/config.gz` (CONFIG_IKCONFIG_PROC),
//! the two places libbpf reads it from.

use std::process::Command;
use std::sync::OnceLock;

/// The value of `option` in a configuration's text (`CONFIG_HZ` -> `250`).
pub(crate) fn value<'a>(config: &'a str, option: &str) -> Option<&'a str> {
    config
        .lines()
        .find_map(|l| l.strip_prefix(option)?.strip_prefix('='))
        .map(str::trim)
}

/// The running kernel's configuration, read once; None where neither file is there (or
/// `gzip`, to read the compressed one, is not).
fn running() -> Option<&'static str> {
    static CONFIG: OnceLock<Option<String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let release = super::sysctl::osrelease()?;
            if let Ok(text) = std::fs::read_to_string(format!("/boot/config-{release}")) {
                return Some(text);
            }
            let out = Command::new("gzip").args(["-dc", "/proc/config.gz"]).output().ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        })
        .as_deref()
}

/// The running kernel's timer frequency (`CONFIG_HZ`): what a jiffy is.
pub(crate) fn hz() -> Option<u32> {
    value(running()?, "CONFIG_HZ")?.parse().ok().filter(|&hz| hz > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_is_read_by_its_whole_name() {
        let config = "# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_EXT4_FS_POSIX_ACL=y\nCONFIG_EXT4_FS=m\n";
        assert_eq!(value(config, "CONFIG_HZ"), Some("250"));
        assert_eq!(value(config, "CONFIG_HZ_250"), Some("y"));
        assert_eq!(value(config, "CONFIG_HZ_100"), None);
        assert_eq!(value(config, "CONFIG_EXT4_FS"), Some("m"));
        assert_eq!(value(config, "CONFIG_EXT4"), None);
    }
}
