//! Issue 27: every fsynclab command line written in the documentation still parses as
//! written. The documents read are README.md, BENCHMARKS.md and every `.md` under docs/.
//! A command line is
//! - a line of a fenced code block that starts with `fsynclab `, `sudo fsynclab ` or
//!   `cargo run --release -- ` (after a `$ ` prompt and `NAME=VALUE` assignments, if any);
//!   in a ```text block, which holds a program's output, only lines after a `$ ` prompt
//!   count, so output such as `fsynclab suite: 6 scenarios in 66 s` is never taken for a
//!   command;
//! - or inline code in prose that starts with `fsynclab ` (`fsynclab show 1 --format seed`).
//!
//! Each is cut at its first shell operator outside quotes (`|`, `&`, `&&`, `;`, `<`, `>`,
//! `(`, `)`, a `#` comment), split into words as sh splits them (quotes, backslashes, lines
//! continued with `\`), and given to clap as fsynclab's `main` gives it
//! (`Cli::try_parse_from`); a line clap refuses fails the test with its file, line and clap's
//! message. `--help` and `--version` count as parsed.
//!
//! Skipped, because they stand for many command lines or for none (the test prints each
//! with its reason):
//! - a word with `...` before a bare `--` (an elided part: `fsynclab matrix ... --per-host`,
//!   `RUN...`);
//! - a word with `[`, `]` or `|` before a bare `--` (a synopsis: `[--dir DIR]`, `RUN\|FILE`);
//! - a placeholder before a bare `--`: a run of two or more capitals, digits and `_`,
//!   starting with a capital, alone or between `=`, `,`, `:`, `/`, `@` and `.` (`RUN`, `ID`,
//!   `FS`, `DIR`, `CONFIG`, `LIMIT`), or anything in angle brackets (`<TAB>`). A shell
//!   variable (`$FARM_STORE`) is not a placeholder: it parses as any value would;
//! - inline code of two words that clap refuses for its missing arguments: it names a
//!   command in a sentence (`fsynclab report` draws ...), it is not a command line.
//!
//! Words after a bare `--` are the command `exec` runs, which clap does not read.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;
#[path = "doc_commands/shell.rs"]
mod shell;

use std::path::{Path, PathBuf};

use clap::error::ErrorKind;
use clap::Parser as _;
use fsynclab::cli::Cli;

use shell::{commands_in, inline_commands_in, split_words, Found};

common::tests! {
    every_command_line_in_the_readme_and_docs_parses_as_written,
    the_splitter_keeps_quoted_words_and_cuts_at_shell_operators,
    output_lines_in_text_blocks_are_not_taken_for_commands,
    the_readme_is_a_front_page_of_at_most_300_lines,
}

/// The Markdown files whose commands are checked: README.md, BENCHMARKS.md, docs/**/*.md.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md"), root.join("BENCHMARKS.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Why `found` stands for many command lines rather than being one, if it does.
fn placeholder(found: &Found) -> Option<String> {
    if let Some(open) = found.text.find('<').filter(|&at| found.text[at..].contains('>')) {
        let end = open + found.text[open..].find('>').unwrap_or(0);
        return Some(format!("`{}` is a placeholder", &found.text[open..=end]));
    }
    for word in found.argv.iter().skip(1).take_while(|w| *w != "--") {
        if word.contains("...") {
            return Some(format!("`{word}` elides part of the line"));
        }
        if word.contains(['[', ']', '|']) {
            return Some(format!("`{word}` is a synopsis's choice or option"));
        }
        let is_placeholder = |s: &&str| {
            s.len() >= 2
                && s.starts_with(|c: char| c.is_ascii_uppercase())
                && s.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        };
        let mut parts = word.split(['=', ',', ':', '/', '@', '.']);
        if let Some(part) = parts.find(is_placeholder) {
            return Some(format!("`{part}` is a placeholder"));
        }
    }
    None
}

fn every_command_line_in_the_readme_and_docs_parses_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (mut checked, mut skipped, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for file in documents() {
        let name = file.strip_prefix(root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for found in commands_in(&text).into_iter().chain(inline_commands_in(&text)) {
            let at = format!("{name}:{}", found.line);
            if let Some(why) = placeholder(&found) {
                skipped.push(format!("{at}: {} (skipped: {why})", found.text));
                continue;
            }
            match Cli::try_parse_from(&found.argv) {
                Ok(_) => checked.push(format!("{at}: {}", found.text)),
                Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
                    checked.push(format!("{at}: {}", found.text));
                }
                // `fsynclab report` in a sentence names the command; it is not a command line.
                Err(e) if found.inline && found.argv.len() == 2 && e.kind() == ErrorKind::MissingRequiredArgument => {
                    skipped.push(format!("{at}: {} (skipped: names a command in prose)", found.text));
                }
                Err(e) => failed.push(format!(
                    "{at}: {}\n  as words: {:?}\n  clap: {}",
                    found.text,
                    found.argv,
                    e.render().to_string().trim_end().replace('\n', "\n        ")
                )),
            }
        }
    }
    eprintln!(
        "{} command lines parsed, {} skipped, {} refused",
        checked.len(),
        skipped.len(),
        failed.len()
    );
    for line in &skipped {
        eprintln!("  {line}");
    }
    assert!(
        failed.is_empty(),
        "{} command lines in the documentation no longer parse:\n{}",
        failed.len(),
        failed.join("\n")
    );
    // The quick start's main job is among them: the documents were found and read.
    assert!(
        checked
            .iter()
            .any(|c| c.starts_with("README.md:") && c.contains("cargo run --release -- suite")),
        "README's `cargo run --release -- suite` was not found among:\n{}",
        checked.join("\n")
    );
}

/// The most lines README.md may have: a front page (what fsynclab is, how to install it, the
/// two commands, one example per capability, links), the rest in docs/.
const README_MOST_LINES: usize = 300;

/// Issue 63: README.md stays a front page; the long tables and runs go to docs/ (it had grown
/// back from 306 lines to 423, the reproduce section alone about 120).
fn the_readme_is_a_front_page_of_at_most_300_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= README_MOST_LINES,
        "README.md has {lines} lines, more than {README_MOST_LINES}: move the longest example's details to its \
         page under docs/ and link to it"
    );
    // Each capability's page is linked from it, and exists.
    for page in [
        "install",
        "testbeds",
        "explain",
        "durability",
        "compare",
        "reproduce",
        "farm",
        "kernels",
    ] {
        let link = format!("(docs/{page}.md");
        assert!(text.contains(&link), "README.md links to no docs/{page}.md");
        assert!(
            root.join(format!("docs/{page}.md")).is_file(),
            "docs/{page}.md is missing"
        );
    }
}

fn the_splitter_keeps_quoted_words_and_cuts_at_shell_operators() {
    let words = |text: &str| split_words(text).0;
    assert_eq!(
        words(r#"exec --check "sh $PWD/check.sh" -- sh -c 'a | b; c' | head"#),
        ["exec", "--check", "sh $PWD/check.sh", "--", "sh", "-c", "a | b; c"]
    );
    assert_eq!(words("suite      # the main job"), ["suite"]);
    assert_eq!(words("run x --set a=1 > out.txt"), ["run", "x", "--set", "a=1"]);
    assert_eq!(words("run x 2>/dev/null"), ["run", "x"]);
    assert_eq!(words("run x && echo done"), ["run", "x"]);
    assert_eq!(words("run x & wait"), ["run", "x"]);
    assert_eq!(words("list\nrun y"), ["list"]);
    assert_eq!(
        words("matrix a \\\n    --set b=1\nnext"),
        ["matrix", "a", "--set", "b=1"]
    );
    assert_eq!(
        words("exec -- sh -c \"\n  x \\\"y\\\" \\$PWD \\\n  z\""),
        ["exec", "--", "sh", "-c", "\n  x \"y\" $PWD   z"]
    );
    assert_eq!(words(r"run a\ b"), ["run", "a b"]);
}

fn output_lines_in_text_blocks_are_not_taken_for_commands() {
    let markdown = "\
Some prose with `fsynclab run inline`.

```text
fsynclab suite: 6 scenarios in 66 s
$ fsynclab compare 1 2
fsynclab matrix m1: 4 cells
```

```sh
LEDGER=/tmp/l FSYNC=on fsynclab exec --scratch ext4 \\
    --device hdd-7200 -- true
sudo fsynclab cleanup
cargo run --release -- suite   # the main job
scripts/test.sh
```
";
    let found = commands_in(markdown);
    let lines: Vec<(usize, Vec<&str>)> = found
        .iter()
        .map(|f| (f.line, f.argv.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(
        lines,
        [
            (5, vec!["fsynclab", "compare", "1", "2"]),
            (
                10,
                vec![
                    "fsynclab",
                    "exec",
                    "--scratch",
                    "ext4",
                    "--device",
                    "hdd-7200",
                    "--",
                    "true"
                ]
            ),
            (12, vec!["fsynclab", "cleanup"]),
            (13, vec!["fsynclab", "suite"]),
        ]
    );
}
