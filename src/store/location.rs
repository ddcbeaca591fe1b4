//! Where the results store is: `--store PATH`, else `FSYNCLAB_STORE`, else the XDG data
//! directory (`~/.local/share/fsynclab/results.sqlite`).

use std::path::{Path, PathBuf};

use super::StoreError;

/// The environment variable that moves the store.
pub const STORE_ENV: &str = "FSYNCLAB_STORE";

/// The store file when nothing says otherwise, from the environment as given (tests pass
/// their own). `None` when neither `XDG_DATA_HOME` nor `HOME` is set.
pub fn choose_path(
    flag: Option<&Path>,
    store_env: Option<&str>,
    xdg_data_home: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    fn nonempty(v: Option<&str>) -> Option<&str> {
        v.filter(|s| !s.is_empty())
    }
    if let Some(p) = flag {
        return Some(p.to_path_buf());
    }
    if let Some(p) = nonempty(store_env) {
        return Some(PathBuf::from(p));
    }
    // XDG Base Directory Specification: a relative XDG_DATA_HOME is invalid and ignored.
    if let Some(x) = nonempty(xdg_data_home).filter(|x| x.starts_with('/')) {
        return Some(Path::new(x).join("fsynclab").join("results.sqlite"));
    }
    nonempty(home).map(|h| Path::new(h).join(".local/share/fsynclab/results.sqlite"))
}

/// The store file: `--store PATH`, else `FSYNCLAB_STORE`, else the XDG data directory.
pub fn resolve_path(flag: Option<&Path>) -> Result<PathBuf, StoreError> {
    let var = |k| std::env::var(k).ok();
    choose_path(
        flag,
        var(STORE_ENV).as_deref(),
        var("XDG_DATA_HOME").as_deref(),
        var("HOME").as_deref(),
    )
    .ok_or(StoreError::NoLocation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_location_follows_flag_env_xdg_home() {
        let p = |flag: Option<&str>, env: Option<&str>, xdg: Option<&str>, home: Option<&str>| {
            choose_path(flag.map(Path::new), env, xdg, home).map(|p| p.display().to_string())
        };
        assert_eq!(
            p(Some("a.sqlite"), Some("/e"), Some("/x"), Some("/h")).unwrap(),
            "a.sqlite"
        );
        assert_eq!(
            p(None, Some("/e/s.sqlite"), Some("/x"), Some("/h")).unwrap(),
            "/e/s.sqlite"
        );
        assert_eq!(
            p(None, Some(""), Some("/x"), Some("/h")).unwrap(),
            "/x/fsynclab/results.sqlite"
        );
        assert_eq!(
            p(None, None, Some("rel"), Some("/h")).unwrap(),
            "/h/.local/share/fsynclab/results.sqlite"
        );
        assert_eq!(p(None, None, None, None), None);
    }
}
