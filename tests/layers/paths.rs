//! Reading the paths a Rust file names: comments, literals and test modules left out,
//! `{a, b}` groups expanded, each path resolved from the module it is written in.

/// A module path inside the crate: `["testbed", "scratch"]`.
pub(crate) type ModPath = Vec<String>;

/// `text` without its comments, and with every string and character literal emptied
/// (`"..."` becomes `""`), so that neither can be taken for a path or a brace.
fn strip_comments_and_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if c == '"' || (c == 'r' && matches!(next, Some('"' | '#')) && !prev_is_ident(&chars, i)) {
            // A string, raw (`r#"..."#`) or not: skipped to its end.
            let raw = c == 'r';
            let mut hashes = 0;
            if raw {
                i += 1;
                while chars.get(i) == Some(&'#') {
                    hashes += 1;
                    i += 1;
                }
            }
            i += 1;
            while i < chars.len() {
                if !raw && chars[i] == '\\' {
                    i += 2;
                    continue;
                }
                if chars[i] == '"' && (0..hashes).all(|h| chars.get(i + 1 + h) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if c == '\'' && next == Some('\\') {
            // `'\n'`, `'\''`, `'\u{..}'`: the escaped character, then to the closing quote.
            i += 3;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// The code of `text` without comments, literals and test modules (`#[cfg(test)] mod NAME
/// { ... }`; a single `#[cfg(test)]` item stays, and a test module declared without a body,
/// `#[cfg(test)] mod tests;`, is that declaration alone: the code after it is read).
pub(crate) fn code_of(text: &str) -> String {
    let code = strip_comments_and_literals(text);
    let mut out = String::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        if !after.trim_start().starts_with("mod ") {
            rest = after;
            continue;
        }
        rest = &after[test_module_end(after)..];
    }
    out.push_str(rest);
    out
}

/// Where the test module `module` starts with (`mod NAME { ... }` or `mod NAME;`) ends: after
/// its closing brace, or after the `;` of a declaration without a body.
fn test_module_end(module: &str) -> usize {
    let mut depth = 0;
    for (i, c) in module.char_indices() {
        match c {
            ';' if depth == 0 => return i + 1,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    module.len()
}

/// Splits `group` (the text after a `{`) into its items, up to the matching `}`.
fn group_items(group: &str) -> Vec<String> {
    let (mut depth, mut item, mut items) = (0, String::new(), Vec::new());
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut item));
                continue;
            }
            _ => {}
        }
        item.push(c);
    }
    items.push(item);
    items
}

/// The paths `text` starts with: `a::b::{c, d::e}` is `a::b::c` and `a::b::d::e`; a path
/// ends at its last name (`crate::x::f(` is `crate::x::f`).
fn expand(text: &str) -> Vec<Vec<String>> {
    let mut segs = Vec::new();
    let mut rest = text.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let mut out = Vec::new();
            for item in group_items(group) {
                for tail in expand(&item) {
                    let mut path = segs.clone();
                    path.extend(tail);
                    out.push(path);
                }
            }
            return out;
        }
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            break;
        }
        rest = &rest[name.len()..];
        segs.push(name);
        match rest.strip_prefix("::") {
            Some(r) => rest = r.trim_start(),
            None => break,
        }
    }
    if segs.is_empty() {
        Vec::new()
    } else {
        vec![segs]
    }
}

/// The paths in `code` that start with `crate`, `super` or `self`, as written.
pub(crate) fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            let before = &code[..at];
            // `$crate::` is this crate in a macro, `foocrate::` another one; `super::super::`
            // and `a::self::` are read from where their path starts.
            if before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') || before.ends_with("::") {
                continue;
            }
            found.extend(expand(&code[at..]).into_iter().filter(|p| p.len() > 1));
        }
    }
    found
}

/// `path`, as written in the module `from`, as a path from the crate's root.
pub(crate) fn resolve(from: &[String], path: &[String]) -> ModPath {
    let mut at: ModPath = from.to_vec();
    let mut segs = path.iter().peekable();
    match segs.peek().map(|s| s.as_str()) {
        Some("crate") => {
            at.clear();
            segs.next();
        }
        Some("self") => {
            segs.next();
        }
        _ => {}
    }
    while segs.peek().is_some_and(|s| s.as_str() == "super") {
        at.pop();
        segs.next();
    }
    at.extend(segs.cloned());
    at
}
