//! Where the results store is: `--store PATH`, else `FSYNCLAB_STORE`, else the XDG data
//! directory (`~/.local/share/fsynclab/results.sqlite`). A store named
//! `postgres://USER[:PASSWORD]@HOST[:PORT]/DB` (or `postgresql://`) is a PostgreSQL database,
//! shown everywhere without its password. Any other `SCHEME://` (a mistyped `postgress://`,
//! `sqlite://`, `file://`) is refused rather than taken for a relative path (issue 24).

use std::fmt;
use std::path::{Path, PathBuf};

use super::StoreError;

/// The environment variable that moves the store.
pub const STORE_ENV: &str = "FSYNCLAB_STORE";

/// Where a store is: a file, or a PostgreSQL database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    File(PathBuf),
    Postgres(PostgresUrl),
}

/// A PostgreSQL database's address as given, which is shown without its password.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresUrl(String);

impl PostgresUrl {
    /// The address whole, password included, to connect with.
    pub fn full(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PostgresUrl({self})")
    }
}

impl fmt::Display for PostgresUrl {
    /// `postgres://user@host/db`: a password in the user part or in `?password=` is left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (scheme, rest) = self.0.split_once("://").unwrap_or(("postgres", &self.0));
        let (authority, tail) = match rest.find(['/', '?']) {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        let authority = match authority.rsplit_once('@') {
            Some((user, host)) => format!("{}@{host}", user.split(':').next().unwrap_or("")),
            None => authority.to_string(),
        };
        let tail = match tail.split_once('?') {
            Some((path, query)) => {
                let kept: Vec<&str> = query.split('&').filter(|kv| !kv.starts_with("password=")).collect();
                if kept.is_empty() {
                    path.to_string()
                } else {
                    format!("{path}?{}", kept.join("&"))
                }
            }
            None => tail.to_string(),
        };
        write!(f, "{scheme}://{authority}{tail}")
    }
}

/// The address schemes a store may be given with.
pub const SCHEMES: [&str; 2] = ["postgres", "postgresql"];

/// The scheme of `text` when it reads as an address, `SCHEME://...` (RFC 3986's spelling of
/// a scheme: a letter, then letters, digits, `+`, `-`, `.`).
fn address_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .then_some(scheme)
}

impl Location {
    /// The store a user named (`--store`, `FSYNCLAB_STORE`, `store copy`'s arguments):
    /// a `postgres://` or `postgresql://` address, a file, and never an address of another
    /// scheme, which would otherwise become a file under the working directory.
    pub fn from_user(text: &Path) -> Result<Location, StoreError> {
        if let Some(scheme) = text.to_str().and_then(address_scheme) {
            if !SCHEMES.contains(&scheme) {
                return Err(StoreError::UnknownScheme {
                    // Shown as an address is: without a password.
                    given: PostgresUrl(text.display().to_string()).to_string(),
                    scheme: scheme.to_string(),
                });
            }
        }
        Ok(Location::parse(text))
    }

    /// The store `text` names: a `postgres://` or `postgresql://` address, else a file. For
    /// what a user typed, [`Location::from_user`].
    pub fn parse(text: &Path) -> Location {
        match text.to_str() {
            Some(t) if t.starts_with("postgres://") || t.starts_with("postgresql://") => {
                Location::Postgres(PostgresUrl(t.to_string()))
            }
            _ => Location::File(text.to_path_buf()),
        }
    }

    /// The store's file, when it is one.
    pub fn as_file(&self) -> Option<&Path> {
        match self {
            Location::File(p) => Some(p),
            Location::Postgres(_) => None,
        }
    }

    /// The location as another process takes it (`FSYNCLAB_STORE`, `--store`): the file
    /// made absolute, or the address whole.
    pub fn for_another_process(&self) -> std::io::Result<String> {
        match self {
            Location::File(p) => Ok(std::path::absolute(p)?.display().to_string()),
            Location::Postgres(url) => Ok(url.full().to_string()),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => write!(f, "{url}"),
        }
    }
}

impl From<&Path> for Location {
    fn from(p: &Path) -> Location {
        Location::parse(p)
    }
}

impl From<&PathBuf> for Location {
    fn from(p: &PathBuf) -> Location {
        Location::parse(p)
    }
}

impl From<PathBuf> for Location {
    fn from(p: PathBuf) -> Location {
        Location::parse(&p)
    }
}

impl From<&Location> for Location {
    fn from(l: &Location) -> Location {
        l.clone()
    }
}

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

/// The store: `--store PATH`, else `FSYNCLAB_STORE`, else the XDG data directory. An
/// address of a scheme the store does not speak is refused, saying where it came from.
pub fn resolve(flag: Option<&Path>) -> Result<Location, StoreError> {
    let var = |k| std::env::var(k).ok();
    let env = var(STORE_ENV);
    let path = choose_path(
        flag,
        env.as_deref(),
        var("XDG_DATA_HOME").as_deref(),
        var("HOME").as_deref(),
    )
    .ok_or(StoreError::NoLocation)?;
    Location::from_user(&path).map_err(|e| match (e, flag) {
        (StoreError::UnknownScheme { given, scheme }, None) => StoreError::UnknownScheme {
            given: format!("{STORE_ENV}={given}"),
            scheme,
        },
        (StoreError::UnknownScheme { given, scheme }, Some(_)) => StoreError::UnknownScheme {
            given: format!("--store {given}"),
            scheme,
        },
        (e, _) => e,
    })
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

    #[test]
    fn a_postgres_address_is_shown_without_its_password() {
        let shown = |t: &str| Location::parse(Path::new(t)).to_string();
        assert_eq!(
            shown("postgres://farm:s3cret@db:5433/runs"),
            "postgres://farm@db:5433/runs"
        );
        assert_eq!(
            shown("postgresql://farm@db/runs?password=x&connect_timeout=5"),
            "postgresql://farm@db/runs?connect_timeout=5"
        );
        assert_eq!(shown("postgres://db/runs"), "postgres://db/runs");
        assert_eq!(
            Location::parse(Path::new("postgres.sqlite")),
            Location::File("postgres.sqlite".into())
        );
    }

    /// Issue 24: `--store postgress://u@host/db` made `./postgress:/u@host/db`, an SQLite
    /// file, and said the run was stored "in postgress://...". An address of any scheme
    /// but PostgreSQL's is refused; paths, with colons or not, are files.
    #[test]
    fn a_store_address_of_an_unknown_scheme_is_refused_not_made_a_file() {
        let user = |t: &str| Location::from_user(Path::new(t));
        for bad in [
            "postgress://u@127.0.0.1/db",
            "sqlite:///tmp/x.sqlite",
            "file://x",
            "POSTGRES://u@h/db",
        ] {
            let err = user(bad).unwrap_err().to_string();
            let scheme = bad.split_once("://").unwrap().0;
            assert!(err.contains(&format!("unknown scheme {scheme}://")), "{bad}: {err}");
            assert!(err.contains("postgres://USER@HOST/DB"), "{bad}: {err}");
        }
        let err = user("postgress://farm:s3cret@db/runs").unwrap_err().to_string();
        assert!(!err.contains("s3cret"), "the password is shown: {err}");
        assert!(matches!(user("postgresql://u@h/db"), Ok(Location::Postgres(_))));
        for file in ["runs.sqlite", "./a:b//c.sqlite", "/tmp/x://y", "2024://x", "dir/x://y"] {
            assert_eq!(user(file).unwrap(), Location::File(file.into()), "{file}");
        }
    }
}
