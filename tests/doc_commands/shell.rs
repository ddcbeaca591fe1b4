//! The command lines written in the project's Markdown, found and split into words as a
//! shell would: the lines of fenced code blocks that start with `fsynclab `, `$ fsynclab `,
//! `sudo fsynclab ` or `cargo run --release -- `, and inline code in prose that starts with
//! `fsynclab `; each cut at its first shell operator outside quotes, with quotes,
//! backslashes and continued lines handled as sh does.

/// One command line found in a Markdown file.
pub struct Found {
    /// The 1-based line of the file where the command starts.
    pub line: usize,
    /// The command as written (its first line, for messages).
    pub text: String,
    /// The words as fsynclab's `main` gets them: `fsynclab` first, then its arguments.
    pub argv: Vec<String>,
    /// Written as inline code in prose rather than in a code block.
    pub inline: bool,
}

/// Every command line in the fenced code blocks of `markdown`. In a ```text block (a
/// program's output) only the lines after a `$ ` prompt are commands; in any other block a
/// line is a command with or without the prompt. Leading `NAME=VALUE` environment
/// assignments are passed over.
pub fn commands_in(markdown: &str) -> Vec<Found> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut found = Vec::new();
    let mut fence: Option<&str> = None; // the open block's language
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if let Some(lang) = trimmed.strip_prefix("```") {
            fence = match fence {
                None => Some(lang.trim()),
                Some(_) => None,
            };
            i += 1;
            continue;
        }
        let Some(lang) = fence else {
            i += 1;
            continue;
        };
        let candidate = match trimmed.strip_prefix("$ ") {
            Some(rest) => Some(rest),
            None if lang != "text" => Some(trimmed),
            None => None,
        };
        let Some(candidate) = candidate.map(skip_assignments) else {
            i += 1;
            continue;
        };
        let prefix = ["sudo fsynclab ", "fsynclab ", "cargo run --release -- "]
            .into_iter()
            .find(|p| candidate.starts_with(p) || candidate == p.trim_end());
        let Some(prefix) = prefix else {
            i += 1;
            continue;
        };
        // The command may go on over the following lines of the block (a trailing
        // backslash, an open quote): hand the splitter the rest of the block.
        let end = (i..lines.len())
            .find(|&j| j > i && lines[j].trim_start().starts_with("```"))
            .unwrap_or(lines.len());
        let rest_of_block = std::iter::once(candidate)
            .chain(lines[i + 1..end].iter().copied())
            .collect::<Vec<_>>()
            .join("\n");
        let (words, consumed) = split_words(&rest_of_block[prefix.len()..]);
        let mut argv = vec!["fsynclab".to_string()];
        argv.extend(words);
        found.push(Found {
            line: i + 1,
            text: candidate.to_string(),
            argv,
            inline: false,
        });
        let newlines = rest_of_block[..prefix.len() + consumed].matches('\n').count();
        i += newlines + 1;
    }
    found
}

/// Every command written as inline code in the prose of `markdown` (outside fenced blocks):
/// a span between single backticks that starts with `fsynclab ` or `sudo fsynclab `. A
/// span may run over the lines of its paragraph, which Markdown joins with spaces.
pub fn inline_commands_in(markdown: &str) -> Vec<Found> {
    let mut found = Vec::new();
    let mut in_fence = false;
    let mut paragraph: Vec<(usize, &str)> = Vec::new();
    for (n, line) in markdown.lines().enumerate().chain([(usize::MAX, "")]) {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        if in_fence || line.trim().is_empty() || line.trim_start().starts_with("```") {
            spans_in(&paragraph, &mut found);
            paragraph.clear();
        } else {
            paragraph.push((n + 1, line));
        }
    }
    found
}

/// The commands among the backtick spans of one paragraph (its lines with their numbers).
fn spans_in(paragraph: &[(usize, &str)], found: &mut Vec<Found>) {
    let text = paragraph.iter().map(|(_, l)| *l).collect::<Vec<_>>().join(" ");
    let line_at = |offset: usize| {
        let mut start = 0;
        for (n, l) in paragraph {
            if offset < start + l.len() + 1 {
                return *n;
            }
            start += l.len() + 1;
        }
        paragraph.last().map_or(0, |(n, _)| *n)
    };
    let mut offset = 0;
    let mut parts = text.split('`');
    while let Some(outside) = parts.next() {
        offset += outside.len() + 1;
        let Some(span) = parts.next() else { break };
        let command = span.strip_prefix("sudo ").unwrap_or(span);
        if let Some(args) = command.strip_prefix("fsynclab ") {
            let mut argv = vec!["fsynclab".to_string()];
            argv.extend(split_words(args).0);
            found.push(Found {
                line: line_at(offset),
                text: span.to_string(),
                argv,
                inline: true,
            });
        }
        offset += span.len() + 1;
    }
}

/// `line` without its leading `NAME=VALUE` words (environment assignments).
fn skip_assignments(mut line: &str) -> &str {
    loop {
        let word_end = line.find(' ').unwrap_or(line.len());
        let word = &line[..word_end];
        let is_assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        });
        if !is_assignment || word_end == line.len() {
            return line;
        }
        line = line[word_end..].trim_start();
    }
}

/// The words of one shell command at the start of `text`, up to its first unquoted newline
/// or operator (`|`, `&`, `;`, `<`, `>`, `(`, `)`, a `#` starting a word), and how many bytes
/// of `text` they took. Single quotes keep everything; double quotes keep everything but a
/// backslash before `$`, `` ` ``, `"`, `\` or a newline; outside quotes a backslash keeps the
/// next character, and a backslash before a newline joins the lines. `$VAR` is kept as
/// written: what matters is whether the line parses, not what the shell would put there.
pub fn split_words(text: &str) -> (Vec<String>, usize) {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for (_, q) in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some((_, q)) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => match chars.peek() {
                            Some(&(_, '\n')) => {
                                chars.next();
                            }
                            Some(&(_, e @ ('$' | '`' | '"' | '\\'))) => {
                                word.push(e);
                                chars.next();
                            }
                            _ => word.push('\\'),
                        },
                        _ => word.push(q),
                    }
                }
            }
            '\\' => match chars.next() {
                Some((_, '\n')) | None => {}
                Some((_, e)) => {
                    in_word = true;
                    word.push(e);
                }
            },
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '#' if !in_word => return (words, line_end(text, at)),
            '\n' | '|' | '&' | ';' | '<' | '>' | '(' | ')' => {
                // `2>&1`: the digits before a redirection are its, not a word.
                let redirected_fd =
                    matches!(c, '<' | '>') && in_word && !word.is_empty() && word.chars().all(|d| d.is_ascii_digit());
                if in_word && !redirected_fd {
                    words.push(word);
                }
                return (words, line_end(text, at));
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    (words, text.len())
}

/// Where the line holding `at` ends (past a comment or the rest of a cut command).
fn line_end(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |n| at + n)
}
