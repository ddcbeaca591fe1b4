//! Issue 14: the layers point down. The module import graph is read from the sources (every
//! `crate::MODULE` path outside comments, `crate::{a, b}` included, by top-level module) and
//! checked: no cycle among the command line, the testbed, the explanation, the result and
//! the scenarios; nothing below the command line imports it; the /proc and /sys parsers
//! import nothing of fsynclab's. Paths through `super::` never leave a top-level module here,
//! so they are not followed.

#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

common::tests! {
    issue14_the_layers_import_no_cycle,
    crate_paths_are_read_as_written,
}

/// The modules that must not import each other in a cycle.
const LAYERS: [&str; 5] = ["cli", "testbed", "explain", "result", "scenario"];

/// Top-level module → module it imports → the files that import it.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The identifier `text` starts with, after blanks and a separating comma.
fn leading_name(text: &str) -> String {
    text.trim_start_matches(|c: char| c.is_whitespace() || c == ',')
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The names a `crate::` path starts with at each occurrence in `code`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        // `$crate::` in a macro is the same crate, `foocrate::` another one.
        if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Items are separated by commas outside nested braces; each names its module first.
            let (mut depth, mut item) = (0, String::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => found.push(leading_name(&std::mem::take(&mut item))),
                    _ => {}
                }
                item.push(c);
            }
            found.push(leading_name(&item));
        } else {
            found.push(leading_name(rest));
        }
    }
    found.retain(|n| !n.is_empty());
    found
}

fn import_graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph = Graph::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        let top = rel.split('/').next().unwrap().trim_end_matches(".rs").to_string();
        if top == "main" || top == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code: String = text
            .lines()
            .map(|l| l.find("//").map_or(l, |i| &l[..i]))
            .collect::<Vec<_>>()
            .join("\n");
        for to in crate_paths(&code) {
            if to != top {
                graph
                    .entry(top.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .insert(rel.clone());
            }
        }
    }
    graph
}

/// A path from `from` back to itself among `within`, if there is one.
fn cycle_through(graph: &Graph, from: &str, within: &[&str]) -> Option<Vec<String>> {
    fn walk(graph: &Graph, at: &str, goal: &str, within: &[&str], path: &mut Vec<String>) -> bool {
        for next in graph.get(at).into_iter().flat_map(|m| m.keys()) {
            if !within.contains(&next.as_str()) {
                continue;
            }
            if next == goal {
                path.push(next.clone());
                return true;
            }
            if path.contains(next) {
                continue;
            }
            path.push(next.clone());
            if walk(graph, next, goal, within, path) {
                return true;
            }
            path.pop();
        }
        false
    }
    let mut path = vec![from.to_string()];
    walk(graph, from, from, within, &mut path).then_some(path)
}

fn issue14_the_layers_import_no_cycle() {
    let graph = import_graph();
    let describe = |path: &[String]| {
        path.windows(2)
            .map(|w| {
                format!(
                    "{} -> {} ({})",
                    w[0],
                    w[1],
                    graph[&w[0]][&w[1]].iter().cloned().collect::<Vec<_>>().join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    for layer in LAYERS {
        if let Some(path) = cycle_through(&graph, layer, &LAYERS) {
            panic!("import cycle: {}", describe(&path));
        }
    }
    for below in ["testbed", "environment", "explain", "kernel", "scenario", "result"] {
        let imports = graph.get(below).and_then(|m| m.get("cli"));
        assert!(imports.is_none(), "{below} imports cli: {imports:?}");
    }
    assert_eq!(
        graph.get("kernel"),
        None,
        "the /proc and /sys parsers import fsynclab's own modules"
    );
}

fn crate_paths_are_read_as_written() {
    assert_eq!(crate_paths("use crate::cli::TargetArgs;"), ["cli"]);
    assert_eq!(
        crate_paths("use crate::{cli, result::{RunResult, Table}, testbed::state};"),
        ["cli", "result", "testbed"]
    );
    assert_eq!(crate_paths("x = crate::kernel::mounts(); $crate::units::x"), ["kernel"]);
}
