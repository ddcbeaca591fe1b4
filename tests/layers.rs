//! The layers point down (issues 14 and 23). The module import graph is read from the
//! sources: every `crate::`, `super::` and `self::` path outside comments, literals and test
//! modules,
//! `{a, b}` groups included, resolved to the module it names. Then:
//! - every top-level module is in exactly one tier of [`TIERS`], and imports only modules of
//!   its own tier or of the tiers below;
//! - no top-level modules import each other in a cycle;
//! - inside every folder, no two of its files (or sub-folders) import each other in a cycle;
//!   a folder's `mod.rs` is the folder itself, which its files may use;
//! - the /proc and /sys parsers (`kernel`) import nothing of fsynclab's;
//! - `lib.rs` lists the same tiers in its overview, and docs/layout.md names every
//!   module `lib.rs` declares (as `src/NAME/` or `src/NAME.rs`) and no path that is gone.
//!
//! Test modules (`#[cfg(test)] mod tests { ... }`) are left out: a test may reach anywhere. A
//! test module declared without a body (`#[cfg(test)] mod tests;`) is that line alone: the code
//! after it is read. And the sources must be read with their imports: a reader that finds
//! fewer than [`FEWEST_IMPORTS`] fails every check rather than pass them on nothing.

#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;
#[path = "layers/paths.rs"]
mod paths;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use paths::{code_of, paths_in, resolve, ModPath};

common::tests! {
    every_import_points_to_its_own_tier_or_below,
    no_modules_import_each_other_in_a_cycle,
    no_files_of_a_folder_import_each_other_in_a_cycle,
    the_kernel_parsers_import_nothing_of_ours,
    every_module_is_in_a_tier,
    paths_are_read_as_written,
    a_test_module_declared_without_a_body_hides_no_import_after_it,
    the_sources_are_read_with_their_imports,
    paths_resolve_from_the_file_they_are_in,
    lib_rs_lists_the_modules_in_these_tiers,
    the_layout_guide_names_every_module_and_only_paths_that_exist,
}

/// The tiers, from the top down: a module may import its own tier and those below it.
const TIERS: &[(&str, &[&str])] = &[
    ("dispatch", &["app"]),
    ("commands", &["commands"]),
    ("command line", &["cli"]),
    ("domain", &["farm"]),
    ("run", &["run"]),
    ("output", &["html", "report", "recording"]),
    ("results", &["matrix", "store", "compare", "result"]),
    (
        "experiments",
        &[
            "scenario",
            "explain",
            "role",
            "sync",
            "observe",
            "testbed",
            "environment",
            "signals",
            "stop",
            "child",
        ],
    ),
    ("vocabulary", &["measure", "params", "error", "rng", "named_file"]),
    ("system", &["kernel", "sys", "units"]),
];

/// The fewest imports (paths of fsynclab's own, resolved) the sources can be read to hold, and
/// the fewest arrows between top-level modules: 2,283 and 152 were read from 297 files when
/// this was written. Fewer is a reader that lost its way (one that skipped the rest of a file
/// from a test module on), not a tree that shrank, and the checks above would pass on nothing.
const FEWEST_IMPORTS: usize = 1_500;
const FEWEST_TOP_LEVEL_ARROWS: usize = 100;

/// One source file: its module path and the module paths its code names.
struct Source {
    file: String,
    module: ModPath,
    /// Whether the file is a folder's `mod.rs` (the folder itself).
    is_mod_rs: bool,
    uses: Vec<ModPath>,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn sources() -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        let mut module: ModPath = rel.trim_end_matches(".rs").split('/').map(String::from).collect();
        let is_mod_rs = module.last().is_some_and(|m| m == "mod");
        if is_mod_rs {
            module.pop();
        }
        if module == ["main"] || module == ["lib"] {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        let uses = paths_in(&code).iter().map(|p| resolve(&module, p)).collect();
        out.push(Source {
            file: rel,
            module,
            is_mod_rs,
            uses,
        });
    }
    assert_read_with_their_imports(&out);
    out
}

/// Fails unless `sources` hold at least [`FEWEST_IMPORTS`] imports and
/// [`FEWEST_TOP_LEVEL_ARROWS`] arrows between top-level modules: every check of this file
/// reads its graph through [`sources`], and none of them may pass on a graph read empty.
fn assert_read_with_their_imports(sources: &[Source]) {
    let imports: usize = sources.iter().map(|s| s.uses.len()).sum();
    let arrows: usize = top_level_graph(sources).values().map(BTreeMap::len).sum();
    assert!(
        imports >= FEWEST_IMPORTS && arrows >= FEWEST_TOP_LEVEL_ARROWS,
        "read {imports} imports and {arrows} arrows between top-level modules from {} files: \
         expected at least {FEWEST_IMPORTS} and {FEWEST_TOP_LEVEL_ARROWS}",
        sources.len()
    );
}

/// Node → node it imports → the files that import it.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The top-level modules and what each imports.
fn top_level_graph(sources: &[Source]) -> Graph {
    let mut graph = Graph::new();
    for s in sources {
        graph.entry(s.module[0].clone()).or_default();
        for to in &s.uses {
            if to[0] != s.module[0] {
                graph
                    .entry(s.module[0].clone())
                    .or_default()
                    .entry(to[0].clone())
                    .or_default()
                    .insert(s.file.clone());
            }
        }
    }
    graph
}

/// Each folder (by module path) and the graph of its files and sub-folders.
fn folder_graphs(sources: &[Source]) -> BTreeMap<ModPath, Graph> {
    let folders: BTreeSet<ModPath> = sources
        .iter()
        .filter(|s| s.is_mod_rs)
        .map(|s| s.module.clone())
        .collect();
    let mut out = BTreeMap::new();
    for folder in folders {
        let n = folder.len();
        // The folder's children: its files and sub-folders, not its mod.rs.
        let children: BTreeSet<String> = sources
            .iter()
            .filter(|s| s.module.len() > n && s.module[..n] == folder[..])
            .map(|s| s.module[n].clone())
            .collect();
        let mut graph = Graph::new();
        for s in sources
            .iter()
            .filter(|s| s.module.len() > n && s.module[..n] == folder[..])
        {
            let from = &s.module[n];
            for to in &s.uses {
                if to.len() > n && to[..n] == folder[..] && to[n] != *from && children.contains(&to[n]) {
                    graph
                        .entry(from.clone())
                        .or_default()
                        .entry(to[n].clone())
                        .or_default()
                        .insert(s.file.clone());
                }
            }
        }
        out.insert(folder, graph);
    }
    out
}

/// A cycle of `graph`, as the nodes on it and the files behind each arrow, if it has one.
fn find_cycle(graph: &Graph) -> Option<String> {
    fn walk(graph: &Graph, at: &str, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
        for next in graph.get(at).into_iter().flat_map(|m| m.keys()) {
            if let Some(i) = path.iter().position(|p| p == next) {
                let mut cycle = path[i..].to_vec();
                cycle.push(next.clone());
                return Some(cycle);
            }
            if done.contains(next) {
                continue;
            }
            path.push(next.clone());
            if let Some(c) = walk(graph, next, path, done) {
                return Some(c);
            }
            path.pop();
        }
        done.insert(at.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for start in graph.keys() {
        if done.contains(start) {
            continue;
        }
        if let Some(cycle) = walk(graph, start, &mut vec![start.clone()], &mut done) {
            let arrows: Vec<String> = cycle
                .windows(2)
                .map(|w| {
                    let files: Vec<&str> = graph[&w[0]][&w[1]].iter().map(String::as_str).collect();
                    format!("{} -> {} ({})", w[0], w[1], files.join(", "))
                })
                .collect();
            return Some(arrows.join("; "));
        }
    }
    None
}

fn tier_of(module: &str) -> Option<usize> {
    TIERS.iter().position(|(_, modules)| modules.contains(&module))
}

fn every_import_points_to_its_own_tier_or_below() {
    let graph = top_level_graph(&sources());
    let mut upward = Vec::new();
    for (from, imports) in &graph {
        for (to, files) in imports {
            if let (Some(f), Some(t)) = (tier_of(from), tier_of(to)) {
                if t < f {
                    upward.push(format!(
                        "{from} ({}) imports {to} ({}): {}",
                        TIERS[f].0,
                        TIERS[t].0,
                        files.iter().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
    }
    assert!(upward.is_empty(), "imports that point up:\n{}", upward.join("\n"));
}

fn no_modules_import_each_other_in_a_cycle() {
    let graph = top_level_graph(&sources());
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import cycle: {cycle}");
    }
}

fn no_files_of_a_folder_import_each_other_in_a_cycle() {
    let cycles: Vec<String> = folder_graphs(&sources())
        .iter()
        .filter_map(|(folder, graph)| find_cycle(graph).map(|c| format!("in src/{}/: {c}", folder.join("/"))))
        .collect();
    assert!(
        cycles.is_empty(),
        "import cycles inside folders:\n{}",
        cycles.join("\n")
    );
}

fn the_kernel_parsers_import_nothing_of_ours() {
    let graph = top_level_graph(&sources());
    let imports = graph
        .get("kernel")
        .map(|m| m.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    assert!(imports.is_empty(), "the /proc and /sys parsers import {imports:?}");
}

fn every_module_is_in_a_tier() {
    let graph = top_level_graph(&sources());
    let missing: Vec<&String> = graph.keys().filter(|m| tier_of(m).is_none()).collect();
    assert!(missing.is_empty(), "modules in no tier of TIERS: {missing:?}");
    let listed: Vec<&str> = TIERS.iter().flat_map(|(_, m)| m.iter().copied()).collect();
    let unknown: Vec<&&str> = listed.iter().filter(|m| !graph.contains_key(**m)).collect();
    assert!(unknown.is_empty(), "TIERS names modules that do not exist: {unknown:?}");
    let twice: BTreeSet<&&str> = listed
        .iter()
        .filter(|m| listed.iter().filter(|n| n == m).count() > 1)
        .collect();
    assert!(twice.is_empty(), "modules in two tiers: {twice:?}");
}

fn paths_are_read_as_written() {
    let paths = |code: &str| paths_in(code).into_iter().map(|p| p.join("::")).collect::<Vec<_>>();
    assert_eq!(paths("use crate::cli::TargetArgs;"), ["crate::cli::TargetArgs"]);
    assert_eq!(
        paths("use crate::{cli, result::{RunResult, Table}, testbed::state};"),
        [
            "crate::cli",
            "crate::result::RunResult",
            "crate::result::Table",
            "crate::testbed::state"
        ]
    );
    assert_eq!(
        paths("x = crate::kernel::mounts(); $crate::units::x; foocrate::y"),
        ["crate::kernel::mounts"]
    );
    assert_eq!(paths("use super::super::plan::Plan;"), ["super::super::plan::Plan"]);
    assert_eq!(paths("use super::*;"), Vec::<String>::new());
    assert_eq!(
        code_of("use a; // crate::x\n#[cfg(test)]\nmod tests { use crate::y; \"}\" }\nuse b;"),
        "use a; \n\nuse b;"
    );
    assert_eq!(
        code_of(r##"f("crate::x {", '{', '\'', r#"}"#); /* crate::y */ g::<'a>('}')"##),
        r#"f("", ' ', ' ', "");  g::<'a>(' ')"#
    );
}

/// A test module declared without a body (`#[cfg(test)] mod tests;`, its code in its own
/// file) hides nothing after it: once, the reader skipped from it to the next `}` and lost the
/// imports in between. A test module with a body is still left out.
fn a_test_module_declared_without_a_body_hides_no_import_after_it() {
    let code = code_of(
        "#[cfg(test)]\nmod tests;\nuse crate::kernel::mounts;\nfn f() { crate::units::x(); }\n\
         #[cfg(test)]\nmod more { use crate::app::y; }\nuse super::plan::Plan;",
    );
    let paths: Vec<String> = paths_in(&code).into_iter().map(|p| p.join("::")).collect();
    assert_eq!(paths, ["crate::kernel::mounts", "crate::units::x", "super::plan::Plan"]);
    // Two declarations in a row, as src/explain/events/mod.rs has them.
    let code = code_of("#[cfg(test)]\nmod tests;\nmod word;\nuse crate::sys::is_root;");
    assert_eq!(paths_in(&code), [["crate", "sys", "is_root"]]);
}

/// The sources are read whole: enough imports to judge the tiers by ([`sources`] fails with
/// fewer than [`FEWEST_IMPORTS`]), among them arrows the tiers are known to have.
fn the_sources_are_read_with_their_imports() {
    let graph = top_level_graph(&sources());
    for (from, to) in [("commands", "cli"), ("scenario", "measure"), ("store", "result")] {
        assert!(
            graph.get(from).is_some_and(|m| m.contains_key(to)),
            "{from} is read to import nothing of {to}"
        );
    }
}

fn paths_resolve_from_the_file_they_are_in() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    assert_eq!(
        resolve(&m("testbed::scratch"), &m("super::request::Place")),
        m("testbed::request::Place")
    );
    assert_eq!(
        resolve(&m("commands::matrix::run"), &m("super::super::select::x")),
        m("commands::select::x")
    );
    assert_eq!(resolve(&m("testbed"), &m("self::scratch::x")), m("testbed::scratch::x"));
    assert_eq!(resolve(&m("a::b"), &m("crate::units::Bytes")), m("units::Bytes"));
}

/// The modules `src/lib.rs` declares (`mod NAME;`, `pub mod NAME;`).
fn lib_modules() -> Vec<String> {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| l.trim_start_matches("pub ").strip_prefix("mod "))
        .filter_map(|rest| rest.strip_suffix(';'))
        .map(String::from)
        .collect()
}

fn lib_rs_lists_the_modules_in_these_tiers() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    // `//! - TIER: ...` up to the next `//! - `, each with the modules it names in backticks.
    let doc: Vec<&str> = lib.lines().filter_map(|l| l.strip_prefix("//!")).collect();
    let mut listed: Vec<(String, BTreeSet<String>)> = Vec::new();
    for line in doc {
        let line = line.trim();
        if let Some(item) = line.strip_prefix("- ") {
            match item.split_once(':') {
                Some((tier, rest)) if TIERS.iter().any(|(t, _)| *t == tier) => {
                    listed.push((tier.to_string(), BTreeSet::new()));
                    listed.last_mut().unwrap().1.extend(backticked(rest));
                }
                _ => listed.push((String::new(), BTreeSet::new())),
            }
        } else if let Some((_, names)) = listed.last_mut() {
            names.extend(backticked(line));
        }
    }
    let listed: Vec<(String, BTreeSet<String>)> = listed.into_iter().filter(|(t, _)| !t.is_empty()).collect();
    let tiers: Vec<&str> = TIERS.iter().map(|(t, _)| *t).collect();
    assert_eq!(
        listed.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
        tiers,
        "lib.rs lists other tiers than tests/layers.rs"
    );
    let modules: BTreeSet<String> = lib_modules().into_iter().collect();
    for ((tier, names), (_, expected)) in listed.iter().zip(TIERS) {
        let named: BTreeSet<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|n| modules.contains(*n))
            .collect();
        let expected: BTreeSet<&str> = expected.iter().copied().collect();
        assert_eq!(
            named, expected,
            "lib.rs's tier {tier} names other modules than tests/layers.rs"
        );
    }
}

/// The words of `text` between backticks.
fn backticked(text: &str) -> Vec<String> {
    text.split('`').skip(1).step_by(2).map(String::from).collect()
}

fn the_layout_guide_names_every_module_and_only_paths_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(root.join("docs/layout.md")).unwrap();
    let block = guide
        .split("```")
        .nth(1)
        .expect("docs/layout.md holds the layout as a code block");
    // Every `src/...` path the block names, up to the first character a path does not hold.
    let paths: Vec<&str> = block
        .match_indices("src/")
        .filter(|(at, _)| !block[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        .map(|(at, _)| {
            let rest = &block[at..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '/' || c == '.'))
                .unwrap_or(rest.len());
            rest[..end].trim_end_matches('.')
        })
        .collect();
    let gone: Vec<&&str> = paths.iter().filter(|p| !root.join(p).exists()).collect();
    assert!(
        gone.is_empty(),
        "docs/layout.md names paths that do not exist: {gone:?}"
    );
    let missing: Vec<String> = lib_modules()
        .into_iter()
        .filter(|m| {
            !paths
                .iter()
                .any(|p| *p == format!("src/{m}/") || *p == format!("src/{m}.rs"))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/layout.md does not name these modules of lib.rs (as src/NAME/ or src/NAME.rs): {missing:?}"
    );
}
