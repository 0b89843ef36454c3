//! A small Bash scanner: which paths a command line names in a way that could change them.
//!
//! Not a shell parser — just enough of the grammar to judge each simple command without being
//! fooled by quoting: words with `'…'`, `"…"` and `\` escapes; the separators `;`, `&&`, `||`,
//! `|`, `&`, newlines and `(…)`, so that each segment of a chain or pipeline is judged alone;
//! command substitutions `$(…)` and backticks, scanned as commands of their own *and* counted as
//! words of the command around them (`rm $(echo tasks.json)`); output redirections (`>`, `>>`,
//! `>|`, `&>`, `&>>`, `N>`, `<>`, `>&file`); here-documents, whose bodies are skipped (a file
//! written by `cat > notes.md <<EOF` may mention anything); comments; `cd`/`pushd`, so that
//! relative paths after them resolve; and `bash -c`, `sh -c` and `eval`, whose script is scanned
//! in turn; and `xargs`, whose command also gets the words printed into its pipeline
//! (`echo …/tasks.json | xargs rm`).
//!
//! The rule is turned around: every word of a command that is not clearly a read is a
//! [`Mention`] — split at quotes, parentheses, commas and `=` so that a path inside an
//! interpreter one-liner (`python3 -c "open('…/tasks.json','w')"`) or an option (`of=…`) is seen
//! too. Reads are `cat`, `head`, `tail`, `less`, `more`, `grep`, `rg`, `jq`, `wc`, `ls`, `echo`,
//! `printf`, `diff`, `stat`, `sed` without `-i`, `find` without `-delete`/`-exec`, `git
//! diff|log|show|status|…` and `cairn` itself; their output redirections are still mentions.
//! `cp`-like commands (`cp`, `install`, `ln`, `rsync`) read their sources, so only their
//! destinations count, and `dd` only its `of=`.

/// How deep `bash -c` / `eval` scripts are followed; deeper scripts are judged as plain words.
const MAX_NESTING: usize = 4;

/// A path (or a piece of a word that may be one) named by a command that could change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub path: String,
    /// The working directory in effect (`cd` followed; `None` once it is unknown).
    pub cwd: Option<String>,
    /// Whether the command works on whole trees (`rm -r`, `mv`, `git clean`, …).
    pub recursive: bool,
}

/// Every mention in `command`, in order.
pub fn mentions(command: &str, cwd: Option<&str>) -> Vec<Mention> {
    let mut out = Vec::new();
    scan(command, cwd.map(str::to_owned), 0, &mut out);
    out
}

fn scan(command: &str, mut cwd: Option<String>, depth: usize, out: &mut Vec<Mention>) {
    // The words printed into the current pipeline so far: `echo a.json | xargs rm` removes them.
    let mut upstream: Vec<String> = Vec::new();
    for cmd in split(command) {
        let feeds_next = cmd.piped_into_next;
        let fed = std::mem::take(&mut upstream);
        if feeds_next {
            upstream = fed.clone();
            upstream.extend(strip_prefixes(&cmd.words).iter().skip(1).cloned());
            upstream.extend(cmd.substituted.iter().cloned());
        }
        let push = |out: &mut Vec<Mention>, path: &str, recursive: bool| {
            out.push(Mention {
                path: path.to_owned(),
                cwd: cwd.clone(),
                recursive,
            });
        };
        for target in &cmd.outputs {
            push(out, target, false);
        }
        let words = strip_prefixes(&cmd.words);
        let Some((program, args)) = words.split_first() else {
            continue;
        };
        let program = program_name(program);
        match program {
            "cd" | "pushd" => {
                cwd = match operands(args).first() {
                    None => None,
                    Some(dir) if *dir == "-" => None,
                    Some(dir) => Some(join(cwd.as_deref(), dir)),
                };
                continue;
            }
            "bash" | "sh" | "zsh" | "dash" | "ksh"
                if depth < MAX_NESTING && dash_c_script(args).is_some() =>
            {
                let script = dash_c_script(args).unwrap_or_default();
                scan(script, cwd.clone(), depth + 1, out);
                continue;
            }
            "eval" if depth < MAX_NESTING => {
                scan(&args.join(" "), cwd.clone(), depth + 1, out);
                continue;
            }
            _ if is_read(program, args) => continue,
            "cp" | "install" | "ln" | "rsync" => {
                let recursive = is_recursive(program, args);
                for target in copy_destinations(args) {
                    push(out, &target, recursive);
                }
            }
            "dd" => {
                for target in args.iter().filter_map(|a| a.strip_prefix("of=")) {
                    push(out, target, false);
                }
            }
            "xargs" => {
                let (inner, inner_args) = xargs_command(args);
                if !is_read(inner, inner_args) {
                    let recursive = is_recursive(inner, inner_args);
                    for piece in args.iter().chain(&fed).flat_map(|a| pieces(a)) {
                        push(out, piece, recursive);
                    }
                }
            }
            _ => {
                let recursive = is_recursive(program, args);
                for piece in args.iter().chain(&cmd.here_docs).flat_map(|a| pieces(a)) {
                    push(out, piece, recursive);
                }
            }
        }
        // What a substitution prints becomes words of this command.
        let recursive = is_recursive(program, args);
        for piece in cmd.substituted.iter().flat_map(|a| pieces(a)) {
            push(out, piece, recursive);
        }
    }
}

/// The command `xargs` runs, after its own options; `echo`, as xargs itself, when none is named.
fn xargs_command(args: &[String]) -> (&str, &[String]) {
    // Options of GNU and BSD xargs that take their value as the next word.
    const WITH_VALUE: [&str; 9] = ["-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "-J"];
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if WITH_VALUE.contains(&arg.as_str()) {
            i += 2;
        } else if arg == "--" {
            i += 1;
            break;
        } else if arg.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    match args.get(i..).and_then(|rest| rest.split_first()) {
        Some((program, rest)) => (program_name(program), rest),
        None => ("echo", &[]),
    }
}

/// Does `program args` only read the files it names?
fn is_read(program: &str, args: &[String]) -> bool {
    const READERS: [&str; 27] = [
        "cat",
        "head",
        "tail",
        "less",
        "more",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "jq",
        "wc",
        "ls",
        "cairn",
        "echo",
        "printf",
        "diff",
        "cmp",
        "stat",
        "file",
        "du",
        "tree",
        "test",
        "[",
        "true",
        "realpath",
        "readlink",
        "sha256sum",
    ];
    const FIND_ACTIONS: [&str; 9] = [
        "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls",
    ];
    const GIT_READS: [&str; 12] = [
        "diff",
        "log",
        "show",
        "status",
        "add",
        "commit",
        "blame",
        "grep",
        "ls-files",
        "shortlog",
        "rev-parse",
        "cat-file",
    ];
    match program {
        "sed" => !args.iter().any(|a| is_in_place(a)),
        "find" => !args.iter().any(|a| FIND_ACTIONS.contains(&a.as_str())),
        "git" => operands(args)
            .first()
            .is_some_and(|sub| GIT_READS.contains(&sub.as_str())),
        _ => READERS.contains(&program),
    }
}

/// Does the command work on whole trees, so that naming `.claude` hits the store inside it?
fn is_recursive(program: &str, args: &[String]) -> bool {
    let git_tree = program == "git"
        && operands(args).first().is_some_and(|sub| {
            ["clean", "rm", "checkout", "restore", "stash", "reset", "mv"].contains(&sub.as_str())
        });
    git_tree
        || ["mv", "find", "shred"].contains(&program)
        || args.iter().any(|a| {
            a == "--recursive"
                || a == "--delete"
                || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains(['r', 'R']))
        })
}

/// The pieces of a word that could be paths: the word split at characters a path written in a
/// command line rarely holds but a script around it does (quotes, brackets, commas, `=`, …).
fn pieces(word: &str) -> impl Iterator<Item = &str> {
    word.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '\'' | '"'
                    | '`'
                    | '('
                    | ')'
                    | '{'
                    | '}'
                    | ','
                    | ';'
                    | '='
                    | '<'
                    | '>'
                    | '|'
                    | '&'
                    | '+'
            )
    })
    // Options are not paths (`--out=PATH` is split at `=` above).
    .filter(|p| !p.is_empty() && !p.starts_with('-'))
}

/// `sed -i`, `sed -i.bak`, `sed --in-place`, `perl -pi -e …`, `sed -Ei`.
fn is_in_place(arg: &str) -> bool {
    arg.starts_with("--in-place")
        || (arg.starts_with('-') && !arg.starts_with("--") && arg[1..].contains('i'))
}

/// For `cp`-like commands: the destination and, for each source, its name inside the
/// destination (copying `tasks.json` into the project directory overwrites the real one).
fn copy_destinations(args: &[String]) -> Vec<String> {
    let mut target_dir = None;
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "-t" {
            target_dir = args.get(i + 1).cloned();
            i += 2;
            continue;
        }
        if let Some(dir) = arg.strip_prefix("--target-directory=") {
            target_dir = Some(dir.to_owned());
        } else {
            rest.push(arg.clone());
        }
        i += 1;
    }
    let ops = operands(&rest);
    let (dest, sources): (String, Vec<&String>) = match target_dir {
        Some(dir) => (dir, ops),
        None => match ops.split_last() {
            Some((dest, sources)) if !sources.is_empty() => ((*dest).clone(), sources.to_vec()),
            _ => return Vec::new(),
        },
    };
    let mut out = vec![dest.clone()];
    for source in sources {
        let name = source
            .trim_end_matches(['/', '\\'])
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or_default();
        if !name.is_empty() {
            out.push(format!("{}/{name}", dest.trim_end_matches(['/', '\\'])));
        }
    }
    out
}

/// Non-option arguments (everything after `--` counts).
fn operands(args: &[String]) -> Vec<&String> {
    let mut out = Vec::new();
    let mut options_done = false;
    for arg in args {
        if options_done || !arg.starts_with('-') || arg == "-" {
            if arg != "-" {
                out.push(arg);
            }
        } else if arg == "--" {
            options_done = true;
        }
    }
    out
}

/// The script of `bash -c SCRIPT`, `bash -lc SCRIPT`, `sh -ec SCRIPT` …
fn dash_c_script(args: &[String]) -> Option<&str> {
    let at = args.iter().position(|a| {
        a.starts_with('-') && !a.starts_with("--") && a.len() > 1 && a.ends_with('c')
    })?;
    args.get(at + 1).map(String::as_str)
}

/// The words of a simple command without the leading assignments, keywords and wrappers, so the
/// first word is the program that runs.
fn strip_prefixes(words: &[String]) -> &[String] {
    const KEYWORDS: [&str; 14] = [
        "then", "do", "else", "if", "elif", "while", "until", "!", "{", "time", "command",
        "builtin", "nohup", "exec",
    ];
    let mut i = 0;
    while let Some(word) = words.get(i) {
        let program = program_name(word);
        if KEYWORDS.contains(&word.as_str()) || is_assignment(word) {
            i += 1;
        } else if program == "sudo" || program == "env" || program == "nice" {
            i += 1;
            // Their options and (for env) assignments; `sudo -u user` takes a value.
            while let Some(next) = words.get(i) {
                if next == "-u" || next == "-g" || (next == "-n" && program == "nice") {
                    i += 2;
                } else if next.starts_with('-') || is_assignment(next) {
                    i += 1;
                } else {
                    break;
                }
            }
        } else {
            break;
        }
    }
    &words[i..]
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// `/usr/bin/tee` → `tee`, `C:\Git\bin\sed.exe` → `sed`.
fn program_name(word: &str) -> &str {
    let base = word.rsplit(['/', '\\']).next().unwrap_or(word);
    base.strip_suffix(".exe").unwrap_or(base)
}

fn join(cwd: Option<&str>, dir: &str) -> String {
    let components = super::normalize(dir, cwd);
    format!("/{}", components.join("/"))
}

/// One simple command: its words, the files its redirections write, and the words of the
/// commands substituted into it (`$(…)`, backticks), whose output becomes its arguments.
#[derive(Debug, Default, PartialEq)]
struct SimpleCommand {
    words: Vec<String>,
    outputs: Vec<String>,
    substituted: Vec<String>,
    /// The bodies of its here-documents: data for a read (`cat > notes.md <<EOF`), a script for
    /// anything else (`python3 - <<EOF`).
    here_docs: Vec<String>,
    /// Its output feeds the next command (`|`, `|&`), which may turn it into arguments (`xargs`).
    piped_into_next: bool,
}

/// An open `(`, `$(` or backtick, so the matching close knows what it ends.
#[derive(Debug, PartialEq)]
enum Open {
    Subshell,
    /// A substitution: the command it sits in (with its partial word) and the index of the first
    /// command scanned inside it.
    Substitution {
        backtick: bool,
        outer: SimpleCommand,
        word: String,
        redirect: Option<Redirect>,
        first: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Redirect {
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `<>`: the next word is a file written to.
    Output,
    /// `>&`: a file unless the next word is a descriptor (`2>&1`, `>&-`).
    OutputOrFd,
    /// `<`, `<&`, `<<<`: the next word is read, not written.
    Input,
    /// `<<` / `<<-`: the next word is a here-document delimiter.
    HereDoc { strip_tabs: bool },
}

fn split(command: &str) -> Vec<SimpleCommand> {
    Lexer::new(command).run()
}

struct Lexer {
    chars: Vec<char>,
    i: usize,
    commands: Vec<SimpleCommand>,
    current: SimpleCommand,
    word: String,
    in_word: bool,
    redirect: Option<Redirect>,
    /// Here-documents opened on the current line: delimiter, `<<-`, and the index the command
    /// that reads them will have.
    heredocs: Vec<(String, bool, usize)>,
    open: Vec<Open>,
}

impl Lexer {
    fn new(command: &str) -> Self {
        Self {
            chars: command.chars().collect(),
            i: 0,
            commands: Vec::new(),
            current: SimpleCommand::default(),
            word: String::new(),
            in_word: false,
            redirect: None,
            heredocs: Vec::new(),
            open: Vec::new(),
        }
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.i + ahead).copied()
    }

    fn run(mut self) -> Vec<SimpleCommand> {
        while let Some(c) = self.peek(0) {
            self.i += 1;
            match c {
                ' ' | '\t' | '\r' => self.finish_word(),
                '\n' => {
                    self.finish_command();
                    self.skip_heredoc_bodies();
                }
                '|' if self.peek(0) == Some('|') => {
                    self.i += 1;
                    self.finish_command();
                }
                '|' => {
                    self.current.piped_into_next = true;
                    self.finish_command();
                }
                ';' => self.finish_command(),
                '(' => {
                    self.finish_command();
                    self.open.push(Open::Subshell);
                }
                ')' => self.close(false),
                '`' if matches!(
                    self.open.last(),
                    Some(Open::Substitution { backtick: true, .. })
                ) =>
                {
                    self.close(true);
                }
                '`' => self.open_substitution(true),
                '&' if self.peek(0) == Some('>') => {
                    self.finish_word();
                    self.i += 1;
                    if self.peek(0) == Some('>') {
                        self.i += 1;
                    }
                    self.redirect = Some(Redirect::Output);
                }
                '&' => self.finish_command(),
                '$' if self.peek(0) == Some('(') => {
                    self.i += 1;
                    self.open_substitution(false);
                }
                '>' | '<' => self.redirection(c),
                '\'' => {
                    self.in_word = true;
                    while let Some(q) = self.peek(0) {
                        self.i += 1;
                        if q == '\'' {
                            break;
                        }
                        self.word.push(q);
                    }
                }
                '"' => self.double_quoted(),
                '\\' => match self.peek(0) {
                    Some('\n') => self.i += 1,
                    Some(next) => {
                        self.i += 1;
                        self.in_word = true;
                        self.word.push(next);
                    }
                    None => {}
                },
                '#' if !self.in_word => {
                    while self.peek(0).is_some_and(|n| n != '\n') {
                        self.i += 1;
                    }
                }
                other => {
                    self.in_word = true;
                    self.word.push(other);
                }
            }
        }
        self.finish_command();
        self.commands
    }

    fn open_substitution(&mut self, backtick: bool) {
        self.in_word = false;
        self.open.push(Open::Substitution {
            backtick,
            outer: std::mem::take(&mut self.current),
            word: std::mem::take(&mut self.word),
            redirect: self.redirect.take(),
            first: self.commands.len(),
        });
    }

    /// A `)` or closing backtick: ends a subshell, or ends a substitution and hands the words
    /// scanned inside it to the command around it.
    fn close(&mut self, backtick: bool) {
        self.finish_command();
        let at = self.open.iter().rposition(|o| match o {
            Open::Subshell => !backtick,
            Open::Substitution { backtick: b, .. } => *b == backtick,
        });
        let Some(at) = at else { return };
        // Anything opened inside and never closed ends here too.
        self.open.truncate(at + 1);
        if let Some(Open::Substitution {
            outer,
            word,
            redirect,
            first,
            ..
        }) = self.open.pop()
        {
            let inner: Vec<String> = self.commands[first..]
                .iter()
                .flat_map(|c| c.words.iter().chain(&c.outputs).chain(&c.substituted))
                .cloned()
                .collect();
            self.current = outer;
            if matches!(redirect, Some(Redirect::Output | Redirect::OutputOrFd)) {
                self.current.outputs.extend(inner);
            } else {
                self.current.substituted.extend(inner);
            }
            self.word = word;
            // The substitution is (part of) a word of the outer command, even if it was its
            // first character.
            self.in_word = true;
            self.redirect = redirect;
        }
    }

    fn double_quoted(&mut self) {
        self.in_word = true;
        while let Some(q) = self.peek(0) {
            self.i += 1;
            match q {
                '"' => break,
                '\\' => match self.peek(0) {
                    Some(next @ ('"' | '\\' | '$' | '`')) => {
                        self.i += 1;
                        self.word.push(next);
                    }
                    Some('\n') => self.i += 1,
                    _ => self.word.push('\\'),
                },
                other => self.word.push(other),
            }
        }
    }

    fn redirection(&mut self, first: char) {
        // `2>file`: the digits before the operator name a descriptor, not a word.
        if self.in_word && !self.word.is_empty() && self.word.chars().all(|c| c.is_ascii_digit()) {
            self.word.clear();
            self.in_word = false;
        } else {
            self.finish_word();
        }
        let kind = match (first, self.peek(0), self.peek(1)) {
            ('>', Some('>' | '|'), _) => {
                self.i += 1;
                Redirect::Output
            }
            ('>', Some('&'), _) => {
                self.i += 1;
                Redirect::OutputOrFd
            }
            ('>', _, _) => Redirect::Output,
            ('<', Some('<'), Some('<')) => {
                self.i += 2;
                Redirect::Input
            }
            ('<', Some('<'), Some('-')) => {
                self.i += 2;
                Redirect::HereDoc { strip_tabs: true }
            }
            ('<', Some('<'), _) => {
                self.i += 1;
                Redirect::HereDoc { strip_tabs: false }
            }
            ('<', Some('>'), _) => {
                self.i += 1;
                Redirect::Output
            }
            ('<', Some('&'), _) => {
                self.i += 1;
                Redirect::Input
            }
            _ => Redirect::Input,
        };
        self.redirect = Some(kind);
    }

    fn finish_word(&mut self) {
        if !self.in_word {
            return;
        }
        let word = std::mem::take(&mut self.word);
        self.in_word = false;
        match self.redirect.take() {
            None => self.current.words.push(word),
            Some(Redirect::Output) => self.current.outputs.push(word),
            Some(Redirect::OutputOrFd) => {
                let is_fd = word == "-" || word.chars().all(|c| c.is_ascii_digit());
                if !is_fd {
                    self.current.outputs.push(word);
                }
            }
            Some(Redirect::HereDoc { strip_tabs }) => {
                self.heredocs.push((word, strip_tabs, self.commands.len()))
            }
            Some(Redirect::Input) => {}
        }
    }

    fn finish_command(&mut self) {
        self.finish_word();
        self.redirect = None;
        let command = std::mem::take(&mut self.current);
        if !command.words.is_empty()
            || !command.outputs.is_empty()
            || !command.substituted.is_empty()
        {
            self.commands.push(command);
        }
    }

    /// Called just after a newline: skips the bodies of the here-documents opened on that line,
    /// keeping each with the command that reads it.
    fn skip_heredoc_bodies(&mut self) {
        for (delimiter, strip_tabs, reader) in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            while self.i < self.chars.len() {
                let end = self.chars[self.i..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(self.chars.len(), |p| self.i + p);
                let line: String = self.chars[self.i..end].iter().collect();
                self.i = (end + 1).min(self.chars.len());
                let line = line.trim_end_matches('\r');
                let line = if strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                if line == delimiter {
                    break;
                }
                body.push_str(line);
                body.push('\n');
            }
            if let Some(command) = self.commands.get_mut(reader) {
                command.here_docs.push(body);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(command: &str) -> Vec<String> {
        mentions(command, Some("/r"))
            .into_iter()
            .map(|m| m.path)
            .collect()
    }

    fn denied(command: &str) -> bool {
        mentions(command, Some("/r")).iter().any(|m| {
            super::super::classify_mention(&m.path, m.cwd.as_deref(), m.recursive).is_some()
        })
    }

    const TASKS: &str = ".claude/projects/demo/tasks.json";

    #[test]
    fn redirections_are_write_targets() {
        assert_eq!(targets("echo hi > a"), ["a"]);
        assert_eq!(targets("echo hi >> a 2> err"), ["a", "err"]);
        assert_eq!(targets("echo hi >| a"), ["a"]);
        assert_eq!(targets("make &> log"), ["log"]);
        assert_eq!(targets("make &>> log"), ["log"]);
        assert_eq!(targets("cmd 2>&1 >&out"), ["out"]);
        assert_eq!(targets("cmd >&- <in"), Vec::<String>::new());
        assert_eq!(targets("cat <<< 'text' <> rw"), ["rw"]);
        assert_eq!(targets("echo>a;echo>>b"), ["a", "b"]);
    }

    #[test]
    fn quoting_is_honoured() {
        assert_eq!(targets(r#"echo "a > b" > 'my file'"#), ["my file"]);
        assert_eq!(
            targets(r#"echo x > "dir with space/f\"q""#),
            ["dir with space/f\"q"]
        );
        assert_eq!(targets(r"echo x > with\ space"), ["with space"]);
        assert!(!denied(&format!("echo 'do not write > {TASKS}'")));
        assert!(!denied(&format!("grep -n tasks {TASKS} # > {TASKS}")));
    }

    #[test]
    fn writing_commands_are_found() {
        let writers = [
            format!("echo '{{}}' > {TASKS}"),
            format!("jq . x.json | tee {TASKS}"),
            format!("jq . x.json | tee -a /tmp/copy {TASKS} >/dev/null"),
            format!("sed -i 's/PENDING/COMPLETE/' {TASKS}"),
            format!("sed -i.bak -e 's/a/b/' {TASKS}"),
            format!("sed --in-place 's/a/b/' {TASKS}"),
            format!("perl -pi -e 's/a/b/' {TASKS}"),
            format!("mv /tmp/new.json {TASKS}"),
            format!("mv {TASKS} /tmp/old.json"),
            format!("cp /tmp/new.json {TASKS}"),
            "cp /tmp/tasks.json .claude/projects/demo/".to_owned(),
            "cp -t .claude/projects/demo /tmp/tasks.json".to_owned(),
            "cp /tmp/c.json .claude/projects/demo/checkpoints/checkpoint-009.json".to_owned(),
            format!("rm -f {TASKS}"),
            "rm -rf .claude/projects/demo".to_owned(),
            format!("truncate -s 0 {TASKS}"),
            format!("dd if=/dev/zero of={TASKS} bs=1 count=1"),
            format!("git checkout -- {TASKS}"),
            "echo x >> .claude/projects/demo/progress/log.md".to_owned(),
            "echo '{}' > .claude/projects/demo/progress/velocity.json".to_owned(),
            "touch a && echo x > .claude/projects/demo/temp/.write-1".to_owned(),
            format!("sudo -u me tee {TASKS} < x"),
            format!("FOO=1 env -i BAR=2 /usr/bin/tee {TASKS}"),
            format!("if true; then cp x {TASKS}; fi"),
            format!("(cd /tmp && cp x /r/{TASKS})"),
            format!("bash -c 'echo {{}} > {TASKS}'"),
            format!("sh -ec \"cp x {TASKS}\""),
            format!("eval 'echo x > {TASKS}'"),
            format!("echo $(cat x > {TASKS})"),
            "echo x > .claude/projects/*/tasks.json".to_owned(),
            format!("C:/Git/usr/bin/sed.exe -i s/a/b/ {TASKS}"),
            r"sed -i s/a/b/ 'C:\repo\.claude\projects\demo\tasks.json'".to_owned(),
            format!("echo x > $CLAUDE_PROJECT_DIR/{TASKS}"),
        ];
        for command in writers {
            assert!(denied(&command), "should be refused: {command}");
        }
    }

    #[test]
    fn reading_and_unrelated_commands_pass() {
        let readers = [
            format!("cat {TASKS}"),
            format!("jq '.tasks[] | select(.status == \"PENDING\")' {TASKS}"),
            format!("cp {TASKS} /tmp/backup.json"),
            format!("sed -n 1,20p {TASKS}"),
            format!("grep -c T- {TASKS} > /tmp/count"),
            format!("git diff {TASKS}"),
            format!("git add {TASKS}"),
            "ls -la .claude/projects/demo/checkpoints".to_owned(),
            "cairn task complete T-003".to_owned(),
            "echo done > .claude/projects/demo/research/T-003.md".to_owned(),
            "cargo test 2>&1 | tail -5".to_owned(),
            "rm -rf target/tmp".to_owned(),
            format!("diff <(cat {TASKS}) /tmp/x"),
        ];
        for command in readers {
            assert!(!denied(&command), "should pass: {command}");
        }
    }

    #[test]
    fn cd_changes_where_relative_paths_point() {
        assert!(denied("cd .claude/projects/demo && echo x > tasks.json"));
        assert!(denied(
            "pushd .claude/projects/demo/progress; echo >> log.md"
        ));
        assert!(denied(
            "cd .claude/projects/demo/checkpoints && cp ../tasks.json ."
        ));
        assert!(!denied("cd src && echo x > tasks.json"));
        let t: Vec<_> = mentions("cd /a/b; cd ../c && touch x > y; cd; echo > z", Some("/r"))
            .into_iter()
            .map(|m| (m.path, m.cwd))
            .collect();
        assert_eq!(
            t,
            [
                ("y".to_owned(), Some("/a/c".to_owned())),
                ("x".to_owned(), Some("/a/c".to_owned())),
                ("z".to_owned(), None)
            ]
        );
    }

    #[test]
    fn heredoc_bodies_are_not_commands() {
        let doc = format!(
            "cat > notes.md <<'EOF'\nRun `echo x > {TASKS}` never.\nrm -rf .claude/projects/demo\nEOF\necho ok > done.txt"
        );
        assert_eq!(targets(&doc), ["notes.md", "done.txt"]);
        let indented = format!("cat <<-END > a\n\tcp x {TASKS}\n\tEND\ncp y b");
        assert_eq!(targets(&indented), ["a", "b", "b/y"]);
        // `cat` reads: a heredoc mentioning the store, written elsewhere, is fine.
        assert!(!denied(&doc));
        // The state file itself written by a here-document is still refused.
        assert!(denied(&format!("cat > {TASKS} <<EOF\n{{}}\nEOF")));
    }

    #[test]
    fn line_continuations_and_comments() {
        assert_eq!(targets("echo a \\\n  > out # > not-this"), ["out"]);
        assert_eq!(targets("echo a#b > c"), ["c"]);
    }

    #[test]
    fn nesting_is_bounded() {
        let mut command = format!("echo x > {TASKS}");
        for _ in 0..10 {
            command = format!("eval {}", shell_quote(&command));
        }
        // Deeper than MAX_NESTING: not followed but judged as words (so still refused), and no
        // stack overflow.
        assert!(denied(&command));
        assert!(!denied(&command.replace(TASKS, "src/main.rs")));
    }

    fn shell_quote(s: &str) -> String {
        format!("'{}'", s.replace('\'', r"'\''"))
    }

    /// The Bash guard turned around: naming the store is a refusal unless the command is a read.
    #[test]
    fn command_forms_table() {
        let cases: &[(&str, bool)] = &[
            // Reads and unrelated commands: allowed.
            ("cat .claude/projects/p/tasks.json", false),
            ("cat .claude/projects/p/tasks.json | jq .", false),
            ("jq '.tasks | length' .claude/projects/p/tasks.json", false),
            ("head -n 20 .claude/projects/p/progress/log.md", false),
            ("tail -f .claude/projects/p/progress/log.md", false),
            ("less .claude/projects/p/project.json", false),
            ("grep -rn T-001 .claude/projects", false),
            ("rg IN_PROGRESS .claude/projects/p/tasks.json", false),
            ("wc -l .claude/projects/p/progress/log.md", false),
            ("ls -la .claude/projects/p/checkpoints", false),
            ("ls .claude", false),
            ("git diff .claude/projects/p/tasks.json", false),
            ("git log -p -- .claude/projects", false),
            ("git show HEAD:.claude/projects/p/tasks.json", false),
            ("git status .claude", false),
            ("cairn task start T-001", false),
            ("cairn task complete T-001 && cairn task next", false),
            ("cargo test -p cairn-hooks 2>&1 | tail -5", false),
            ("rm -rf target/debug", false),
            ("rm -rf src/.claude-notes", false),
            ("python3 -c \"print(1 + 1)\"", false),
            ("node -e \"console.log(process.version)\"", false),
            ("cat .claude/projects/p/tasks.json > /tmp/copy.json", false),
            ("find .claude/projects -name '*.json'", false),
            (
                "mkdir -p .claude/projects/p/research && echo x > .claude/projects/p/research/T-001.md",
                false,
            ),
            ("sh -c 'cat .claude/projects/p/tasks.json'", false),
            ("echo $(cat .claude/projects/p/tasks.json | wc -l)", false),
            // Writes, deletions and anything not clearly a read: denied.
            ("rm -rf .claude/projects", true),
            ("rm -rf .claude/projects/", true),
            ("rm -rf .claude", true),
            ("rm -r ./.claude/", true),
            ("mv .claude /tmp/old-claude", true),
            ("rm -rf .claude/projects/p", true),
            ("rm .claude/projects/p/.lock", true),
            ("rm .claude/projects/p/notes.md", true),
            ("truncate -s 0 .claude/projects/p/progress/log.md", true),
            ("git checkout -- .claude/projects/p/tasks.json", true),
            ("git restore .claude/projects/p", true),
            ("git clean -fdx .claude", true),
            ("git stash push .claude/projects", true),
            (
                "python3 -c \"open('.claude/projects/p/tasks.json','w').write('{}')\"",
                true,
            ),
            (
                "python -c 'import json; json.dump({}, open(\".claude/projects/p/project.json\", \"w\"))'",
                true,
            ),
            (
                "node -e \"require('fs').writeFileSync('.claude/projects/p/tasks.json', '{}')\"",
                true,
            ),
            (
                "perl -e 'open(F, \">.claude/projects/p/tasks.json\")'",
                true,
            ),
            (
                "ruby -e 'File.write(\".claude/projects/p/tasks.json\", \"{}\")'",
                true,
            ),
            ("cat x.json | tee .claude/projects/p/tasks.json", true),
            ("echo .claude/projects/p/tasks.json | xargs rm", true),
            (
                "printf '%s' .claude/projects/p | xargs -I{} rm -rf {}",
                true,
            ),
            (
                "ls .claude/projects/p/tasks.json | xargs -n 1 truncate -s 0",
                true,
            ),
            ("echo .claude/projects/p/tasks.json | xargs cat", false),
            ("echo .claude/projects/p/tasks.json | xargs", false),
            ("echo .claude/projects/p/tasks.json || xargs rm", false),
            ("find src -name '*.rs' | xargs sed -i s/a/b/", false),
            ("jq . x.json > .claude/projects/p/tasks.json", true),
            ("cairn status && rm .claude/projects/p/tasks.json", true),
            ("ls; touch .claude/projects/p/tasks.json", true),
            ("rm $(echo .claude/projects/p/tasks.json)", true),
            ("rm `ls -d .claude/projects/*`", true),
            ("bash -c 'rm -rf .claude/projects'", true),
            ("sh -c \"echo {} > .claude/projects/p/tasks.json\"", true),
            ("eval \"rm -rf .claude/projects/p\"", true),
            ("find .claude/projects -name '*.json' -delete", true),
            ("cd .claude/projects/p && rm -rf ..", true),
            (
                "cd .claude/projects/p && python3 -c \"open('tasks.json','w')\"",
                true,
            ),
            ("chmod -R 000 .claude", true),
            ("cp -r /tmp/backup/. .claude/projects/p", true),
            ("dd if=/dev/zero of=.claude/projects/p/tasks.json", true),
            (
                "awk '{print > \".claude/projects/p/progress/log.md\"}' x",
                true,
            ),
            (
                "python3 - <<'EOF'\nopen('.claude/projects/p/tasks.json', 'w').write('{}')\nEOF",
                true,
            ),
            (
                "cat > notes.md <<'EOF'\nnever touch .claude/projects/p/tasks.json\nEOF",
                false,
            ),
        ];
        assert!(cases.len() >= 40);
        for (command, refused) in cases {
            assert_eq!(denied(command), *refused, "{command}");
        }
    }
}
