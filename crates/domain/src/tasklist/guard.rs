//! The guards on what comes from outside: list ids (they become directory names) and the
//! execution pointer (it tells a reader which directory to trust).

use crate::execution::ExecutionError;

/// Refuses a list id that could leave `~/.claude/tasks/`: empty, `.`, containing `..`, `/`, `\`
/// or a control character.
pub fn validate_list_id(list_id: &str) -> Result<(), ExecutionError> {
    let reason = if list_id.trim().is_empty() {
        Some("it is empty")
    } else if list_id == "." {
        Some("`.` is the tasks root itself")
    } else if list_id.contains("..") {
        Some("it contains `..`")
    } else if list_id.contains('/') || list_id.contains('\\') {
        Some("it contains a path separator")
    } else if list_id.chars().any(char::is_control) {
        Some("it contains a control character")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(ExecutionError::InvalidListId {
            list_id: list_id.to_owned(),
            reason: reason.to_owned(),
        }),
        None => Ok(()),
    }
}

/// Reads `execution_pointer.md` (its first non-blank line) and returns the directory it names,
/// lexically normalised, if that is an absolute path at or under `home` after resolving `.` and
/// `..`. Unix paths (`/…`) and Windows drive paths (`C:\…`, `C:/…`) are understood; symlinks are
/// not resolved (this is pure; the adapter may canonicalise afterwards and check again).
pub fn resolve_execution_pointer(pointer: &str, home: &str) -> Result<String, ExecutionError> {
    let reject = |reason: &str| ExecutionError::PointerRejected {
        pointer: pointer.trim().to_owned(),
        reason: reason.to_owned(),
    };
    let line = pointer
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .ok_or_else(|| reject("it is empty"))?;
    let target = AbsolutePath::parse(line).ok_or_else(|| reject("it is not an absolute path"))?;
    let home = AbsolutePath::parse(home.trim())
        .ok_or_else(|| reject("the home directory is not an absolute path"))?;
    let under = target.root.eq_ignore_ascii_case(&home.root)
        && target.parts.len() >= home.parts.len()
        && target.parts.iter().zip(&home.parts).all(|(a, b)| a == b);
    if !under {
        return Err(reject("it resolves outside the home directory"));
    }
    Ok(target.render())
}

struct AbsolutePath<'a> {
    /// `/`, or a drive like `C:`.
    root: String,
    separator: char,
    parts: Vec<&'a str>,
}

impl<'a> AbsolutePath<'a> {
    fn parse(path: &'a str) -> Option<Self> {
        let bytes = path.as_bytes();
        let (root, separator, rest): (String, char, &str) =
            if let Some(rest) = path.strip_prefix('/') {
                ("/".into(), '/', rest)
            } else if bytes.len() >= 3
                && bytes[0].is_ascii_alphabetic()
                && bytes[1] == b':'
                && matches!(bytes[2], b'/' | b'\\')
            {
                (path[..2].to_ascii_uppercase(), '\\', &path[3..])
            } else {
                return None;
            };
        let mut parts = Vec::new();
        let split: Box<dyn Iterator<Item = &str>> = if separator == '/' {
            Box::new(rest.split('/'))
        } else {
            Box::new(rest.split(['/', '\\']))
        };
        for part in split {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                part => parts.push(part),
            }
        }
        Some(Self {
            root,
            separator,
            parts,
        })
    }

    fn render(&self) -> String {
        let joined = self.parts.join(&self.separator.to_string());
        if self.root == "/" {
            format!("/{joined}")
        } else {
            format!("{}{}{joined}", self.root, self.separator)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOME: &str = "/Users/sequenzia";

    #[test]
    fn list_ids() {
        assert!(validate_list_id("claude-alchemy").is_ok());
        assert!(validate_list_id("my.list_2").is_ok());
        for bad in [
            "", "  ", ".", "..", "a..b", "a/b", "a\\b", "/abs", "a\0b", "a\nb",
        ] {
            assert!(
                matches!(
                    validate_list_id(bad),
                    Err(ExecutionError::InvalidListId { .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn pointers_under_home_are_accepted_and_normalised() {
        let seed = "/Users/sequenzia/dev/repos/my-project/.claude/sessions/__live_session__/\n";
        assert_eq!(
            resolve_execution_pointer(seed, HOME).unwrap(),
            "/Users/sequenzia/dev/repos/my-project/.claude/sessions/__live_session__"
        );
        assert_eq!(
            resolve_execution_pointer("\n  /Users/sequenzia/./a/../b  \n", HOME).unwrap(),
            "/Users/sequenzia/b"
        );
        assert_eq!(
            resolve_execution_pointer("/Users/sequenzia", "/Users/sequenzia/").unwrap(),
            "/Users/sequenzia"
        );
        assert_eq!(
            resolve_execution_pointer("c:\\Users\\me\\p\\..\\q", "C:/Users/me").unwrap(),
            "C:\\Users\\me\\q"
        );
    }

    #[test]
    fn pointers_escaping_home_are_refused() {
        for bad in [
            "/Users/sequenzia/../other/x",
            "/Users/sequenzia-evil/x",
            "/etc/passwd",
            "relative/path",
            "./x",
            "~/x",
            "",
            "/Users/sequenzia/../../../../Users/other",
            "D:\\Users\\sequenzia",
        ] {
            assert!(
                matches!(
                    resolve_execution_pointer(bad, HOME),
                    Err(ExecutionError::PointerRejected { .. })
                ),
                "{bad:?}"
            );
        }
        assert!(resolve_execution_pointer("/x", "relative-home").is_err());
    }
}
