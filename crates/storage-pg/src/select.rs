//! Which project store a run uses: `--store`, else `CAIRN_STORE`, else `store = "…"` in
//! `<root>/.claude/cairn.toml`, else the files under the root. Shared by `cairn` and
//! `cairn-hook` so the two never disagree about where a project lives.

use std::path::Path;

/// The variable naming the store when `--store` is not given.
pub const STORE_ENV: &str = "CAIRN_STORE";

/// The repository's configuration file, relative to the root.
pub const CONFIG_FILE: &str = ".claude/cairn.toml";

/// Where the project store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// The files under the repository root (the default).
    Files,
    /// A PostgreSQL database, by URL.
    Postgres(String),
}

/// The store for the repository at `root`: `explicit` (the `--store` flag, which the CLI also
/// fills from `CAIRN_STORE`), else `CAIRN_STORE`, else the configuration file.
/// Errors: a value that is not a `postgres://` URL (the files need no naming), or an unreadable
/// configuration file; the message says where the value came from.
pub fn choose(explicit: Option<&str>, root: &Path) -> Result<StoreChoice, String> {
    if let Some(value) = explicit.filter(|v| !v.trim().is_empty()) {
        return parse(value, "--store");
    }
    if let Ok(value) = std::env::var(STORE_ENV)
        && !value.trim().is_empty()
    {
        return parse(&value, STORE_ENV);
    }
    let config = root.join(CONFIG_FILE);
    let text = match std::fs::read_to_string(&config) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StoreChoice::Files),
        Err(e) => return Err(format!("cannot read {}: {e}", config.display())),
    };
    match store_setting(&text) {
        Some(value) => parse(&value, &config.display().to_string()),
        None => Ok(StoreChoice::Files),
    }
}

fn parse(value: &str, source: &str) -> Result<StoreChoice, String> {
    let value = value.trim();
    if crate::url::is_postgres_url(value) {
        Ok(StoreChoice::Postgres(value.to_owned()))
    } else {
        Err(format!(
            "the store `{}` (from {source}) is not a postgres:// URL; leave it unset to keep the \
             project in files under the repository root",
            crate::url::redact(value)
        ))
    }
}

/// The top-level `store = "…"` of a cairn.toml, before any `[table]`. Only this one key is
/// read, so a whole TOML parser would add a dependency for nothing.
fn store_setting(text: &str) -> Option<String> {
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            return None;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() != "store" {
            continue;
        }
        let value = value.trim();
        let value = value.split_once(" #").map_or(value, |(v, _)| v).trim();
        let unquoted = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        return Some(unquoted.to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_is_read_from_the_top_level_only() {
        assert_eq!(
            store_setting("# team store\nstore = \"postgres://h/d\"  # shared\n"),
            Some("postgres://h/d".into())
        );
        assert_eq!(store_setting("[other]\nstore = \"x\"\n"), None);
        assert_eq!(store_setting("stored = 1\n"), None);
    }

    #[test]
    fn a_flag_wins_and_anything_but_a_url_is_refused() {
        let dir = std::env::temp_dir();
        assert_eq!(
            choose(Some("postgres://h/d"), &dir),
            Ok(StoreChoice::Postgres("postgres://h/d".into()))
        );
        let refused = choose(Some("mysql://u:secret@h/d"), &dir).unwrap_err();
        assert!(refused.contains("--store"), "{refused}");
        assert!(!refused.contains("secret"), "{refused}");
    }

    #[test]
    fn the_config_file_names_the_store_when_nothing_else_does() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(".claude")).unwrap();
        std::fs::write(
            root.path().join(CONFIG_FILE),
            "store = 'postgresql://team@db/cairn'\n",
        )
        .unwrap();
        if std::env::var(STORE_ENV).is_err() {
            assert_eq!(
                choose(None, root.path()),
                Ok(StoreChoice::Postgres("postgresql://team@db/cairn".into()))
            );
        }
        std::fs::remove_file(root.path().join(CONFIG_FILE)).unwrap();
        if std::env::var(STORE_ENV).is_err() {
            assert_eq!(choose(None, root.path()), Ok(StoreChoice::Files));
        }
    }
}
