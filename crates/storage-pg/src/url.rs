//! Store URLs as people see them: in errors and hints, never with the password.

/// Whether `store` names a PostgreSQL database rather than a directory.
pub fn is_postgres_url(store: &str) -> bool {
    store.starts_with("postgres://") || store.starts_with("postgresql://")
}

/// `url` without its password: `postgres://user:secret@host/db?password=x` →
/// `postgres://user@host/db`. Also strips `password=…` from a key-value connection string.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url
            .split_whitespace()
            .filter(|pair| !pair.starts_with("password="))
            .collect::<Vec<_>>()
            .join(" ");
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            format!("{user}@{host}")
        }
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|pair| !pair.starts_with("password="))
                .collect();
            if kept.is_empty() {
                path.to_owned()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_never_survives() {
        assert_eq!(
            redact("postgres://cairn:s3cret@db.example:5432/team?sslmode=disable&password=x"),
            "postgres://cairn@db.example:5432/team?sslmode=disable"
        );
        assert_eq!(
            redact("postgresql://cairn:p%40ss@localhost/db"),
            "postgresql://cairn@localhost/db"
        );
        assert_eq!(
            redact("postgres://localhost/db?password=x"),
            "postgres://localhost/db"
        );
        assert_eq!(redact("postgres://u@h/d"), "postgres://u@h/d");
        assert_eq!(
            redact("host=db user=cairn password=secret dbname=team"),
            "host=db user=cairn dbname=team"
        );
    }

    #[test]
    fn only_postgres_urls_are_databases() {
        assert!(is_postgres_url("postgres://h/d"));
        assert!(is_postgres_url("postgresql://h/d"));
        assert!(!is_postgres_url("/srv/team"));
        assert!(!is_postgres_url("mysql://h/d"));
    }
}
