//! A small Bash scanner: which paths a command line visibly writes to.
//!
//! Not a shell parser — just enough of the grammar to find write targets without being fooled by
//! quoting: words with `'…'`, `"…"` and `\` escapes; the separators `;`, `&&`, `||`, `|`, `&`,
//! newlines, `(…)`, `$(…)` and backticks (what is inside a substitution is scanned as a command
//! of its own); output redirections (`>`, `>>`, `>|`, `&>`, `&>>`, `N>`, `<>`, `>&file`);
//! here-documents, whose bodies are skipped (a file written by `cat > notes.md <<EOF` may
//! mention anything); comments; `cd`/`pushd`, so that relative paths after them resolve; and
//! `bash -c`, `sh -c` and `eval`, whose script is scanned in turn.
//!
//! Commands that write their operands: `tee`, `sed -i`, `perl -i`, `mv` (sources and
//! destination: a moved-away state file is as lost as an overwritten one), `cp`, `install`, `ln`
//! and `rsync` (the destination, and each source's name inside it), `rm`, `rmdir`, `unlink`,
//! `truncate`, `shred`, `dd of=…`, and `git checkout|restore|rm|mv`. A program that opens files
//! itself (`python -c "open(…)"`) is not seen.

/// How deep `bash -c` / `eval` scripts are followed.
const MAX_NESTING: usize = 4;

/// Every path `command` writes to, each with the working directory in effect at that point
/// (`cwd` updated by `cd`; `None` once it is unknown).
pub fn write_targets(command: &str, cwd: Option<&str>) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    scan(command, cwd.map(str::to_owned), 0, &mut out);
    out
}

fn scan(
    command: &str,
    mut cwd: Option<String>,
    depth: usize,
    out: &mut Vec<(String, Option<String>)>,
) {
    for cmd in split(command) {
        for target in &cmd.outputs {
            out.push((target.clone(), cwd.clone()));
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
            }
            "bash" | "sh" | "zsh" | "dash" | "ksh" if depth < MAX_NESTING => {
                if let Some(script) = dash_c_script(args) {
                    scan(script, cwd.clone(), depth + 1, out);
                }
            }
            "eval" if depth < MAX_NESTING => scan(&args.join(" "), cwd.clone(), depth + 1, out),
            _ => {
                for target in command_targets(program, args) {
                    out.push((target, cwd.clone()));
                }
            }
        }
    }
}

/// The operands `program` writes to.
fn command_targets(program: &str, args: &[String]) -> Vec<String> {
    let owned = |v: Vec<&String>| v.into_iter().cloned().collect::<Vec<_>>();
    match program {
        "tee" | "rm" | "rmdir" | "unlink" | "truncate" | "shred" => owned(operands(args)),
        "sed" | "perl" if args.iter().any(|a| is_in_place(a)) => owned(operands(args)),
        "mv" => {
            let mut all = owned(operands(args));
            all.extend(copy_destinations(args));
            all
        }
        "cp" | "install" | "ln" | "rsync" => copy_destinations(args),
        "dd" => args
            .iter()
            .filter_map(|a| a.strip_prefix("of="))
            .map(str::to_owned)
            .collect(),
        "git" => {
            let ops = operands(args);
            match ops.split_first() {
                Some((sub, rest))
                    if ["checkout", "restore", "rm", "mv"].contains(&sub.as_str()) =>
                {
                    owned(rest.to_vec())
                }
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
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

/// One simple command: its words and the files its redirections write.
#[derive(Debug, Default, PartialEq)]
struct SimpleCommand {
    words: Vec<String>,
    outputs: Vec<String>,
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
    heredocs: Vec<(String, bool)>,
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
                ';' | '|' | '(' | ')' | '`' => self.finish_command(),
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
                    self.finish_command();
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
            Some(Redirect::HereDoc { strip_tabs }) => self.heredocs.push((word, strip_tabs)),
            Some(Redirect::Input) => {}
        }
    }

    fn finish_command(&mut self) {
        self.finish_word();
        self.redirect = None;
        let command = std::mem::take(&mut self.current);
        if !command.words.is_empty() || !command.outputs.is_empty() {
            self.commands.push(command);
        }
    }

    /// Called just after a newline: skips the bodies of the here-documents opened on that line.
    fn skip_heredoc_bodies(&mut self) {
        for (delimiter, strip_tabs) in std::mem::take(&mut self.heredocs) {
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
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(command: &str) -> Vec<String> {
        write_targets(command, Some("/r"))
            .into_iter()
            .map(|(t, _)| t)
            .collect()
    }

    fn denied(command: &str) -> bool {
        write_targets(command, Some("/r"))
            .iter()
            .any(|(t, cwd)| super::super::classify(t, cwd.as_deref()).is_some())
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
        let t = write_targets("cd /a/b; cd ../c && touch x > y; cd; echo > z", Some("/r"));
        assert_eq!(
            t,
            [
                ("y".to_owned(), Some("/a/c".to_owned())),
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
        // Deeper than MAX_NESTING: not followed, and no stack overflow.
        assert!(!denied(&command));
    }

    fn shell_quote(s: &str) -> String {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
