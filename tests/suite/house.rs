//! The house rules (issue 45), read from the sources:
//! - the crates stand on floors ([`CRATE_FLOORS`]): a crate depends
//!   (`Cargo.toml`, any dependency table) only on crates of lower floors;
//! - within each crate, the files' imports form no circle, so its files
//!   stand on floors (`house::print_floors` prints them);
//! - nor do its concepts, the top-level modules (`world`, `scenario`,
//!   `oracles`, ...): each stands above the concepts it uses;
//! - no file is over 800 lines without a one-line reason at its top
//!   (`//! Long: ...` among its first lines).
//!
//! A file's imports are the `crate::` and `super::` paths it names
//! anywhere in its code (a `use` or an inline path), resolved to the
//! deepest module file that exists. A path to the file's own ancestor
//! module is not counted: a child may use what its parent module holds
//! (that is how a module shares its types), and the parent names its
//! children to declare them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates and their source roots, relative to the workspace.
const CRATES: [(&str, &str); 7] = [
    ("zkcheck", "src"),
    ("zk-recipes", "recipes/src"),
    ("zk-sim", "sim/src"),
    ("zk-models", "models/src"),
    ("zk-reports", "reports/src"),
    ("zk-live", "live/src"),
    ("zkcheck-zookeeper-client", "client/src"),
];

/// The workspace's crates by floor: each depends only on lower floors.
const CRATE_FLOORS: [(&str, &str, usize); 7] = [
    ("zk-recipes", "recipes", 0),
    ("zk-reports", "reports", 0),
    ("zk-sim", "sim", 1),
    ("zk-models", "models", 2),
    ("zk-live", "live", 2),
    ("zkcheck-zookeeper-client", "client", 3),
    ("zkcheck", ".", 4),
];

/// Most lines a file has without a reason at its top.
const LONG_LINES: usize = 800;

/// A module: its path in its crate (`world::coverage`; the root is "").
type Module = String;

/// One crate's files by module, and each module's imports.
struct CrateGraph {
    files: BTreeMap<Module, PathBuf>,
    imports: BTreeMap<Module, BTreeSet<Module>>,
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, in path order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The module a file under `root` holds (`a/mod.rs` and `a.rs`: `a`;
/// `lib.rs` and `main.rs`: the root).
fn module_of(root: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(root).expect("under its root");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts.join("::")
}

/// The code of a file without its comments (line comments, doc comments
/// and block comments) and string literals, so that only paths in code
/// count.
fn code_of(text: &str) -> String {
    let mut code = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        code.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            ('"', _) => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    match (escaped, c) {
                        (false, '\\') => escaped = true,
                        (false, '"') => break,
                        _ => escaped = false,
                    }
                }
                code.push_str("\"\"");
            }
            _ => code.push(c),
        }
    }
    code
}

/// The module paths `code` names after `crate::` or `super::` (a brace
/// group gives each of its items), each as written: ("crate" | "super",
/// segments).
fn named_paths(code: &str) -> Vec<(bool, Vec<String>)> {
    let mut found = Vec::new();
    for (anchor, is_crate) in [("crate::", true), ("super::", false)] {
        let mut rest = code;
        while let Some(at) = rest.find(anchor) {
            let before = rest[..at].chars().last();
            rest = &rest[at + anchor.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // `$crate::` or a longer name
            }
            let mut supers = 0;
            while let Some(next) = rest.strip_prefix("super::") {
                supers += 1;
                rest = next;
            }
            for path in paths_at(rest) {
                let mut segments = vec!["super".to_string(); supers];
                segments.extend(path);
                found.push((is_crate, segments));
            }
        }
    }
    found
}

/// The paths written at the start of `text`: `a::b::C` gives [a, b, C];
/// `{a::X, b}` gives [a, X] and [b] (one level of braces).
fn paths_at(text: &str) -> Vec<Vec<String>> {
    let ident = |s: &str| -> usize {
        s.char_indices()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map_or(s.len(), |(i, _)| i)
    };
    let mut segments = Vec::new();
    let mut rest = text;
    loop {
        let len = ident(rest);
        if len == 0 {
            break;
        }
        segments.push(rest[..len].to_string());
        match rest[len..].strip_prefix("::") {
            Some(next) => rest = next,
            None => return vec![segments],
        }
    }
    let Some(group) = rest.strip_prefix('{') else {
        return vec![segments];
    };
    let end = group.find('}').unwrap_or(group.len());
    group[..end]
        .split(',')
        .flat_map(|item| paths_at(item.trim()))
        .map(|tail| segments.iter().cloned().chain(tail).collect())
        .collect()
}

impl CrateGraph {
    fn read(root: &Path) -> CrateGraph {
        let files: BTreeMap<Module, PathBuf> = rust_files(root)
            .into_iter()
            .map(|file| (module_of(root, &file), file))
            .collect();
        let mut imports = BTreeMap::new();
        for (module, file) in &files {
            let text = std::fs::read_to_string(file).expect("a source file");
            let mut targets = BTreeSet::new();
            for (is_crate, segments) in named_paths(&code_of(&text)) {
                let start = match is_crate {
                    true => Vec::new(),
                    false => parent_of(module),
                };
                if let Some(target) = resolve(&files, start, &segments) {
                    if !is_ancestor(&target, module) {
                        targets.insert(target);
                    }
                }
            }
            imports.insert(module.clone(), targets);
        }
        CrateGraph { files, imports }
    }

    /// Each top-level module (a module's first segment) and the other
    /// top-level modules its files import.
    fn top_level(&self) -> BTreeMap<Module, BTreeSet<Module>> {
        let top = |module: &str| module.split("::").next().unwrap_or("").to_string();
        let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        for (module, imports) in &self.imports {
            let from = top(module);
            let entry = graph.entry(from.clone()).or_default();
            entry.extend(imports.iter().map(|m| top(m)).filter(|to| *to != from));
        }
        graph
    }

    /// The circles: strongly connected sets of more than one module.
    fn circles(&self) -> Vec<Vec<Module>> {
        circles_of(&self.imports)
    }
}

/// The circles of a graph: its strongly connected sets of more than one
/// node, each sorted.
fn circles_of(imports: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    let modules: Vec<&Module> = imports.keys().collect();
    let reach = |from: &Module| -> BTreeSet<Module> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(module) = stack.pop() {
            for next in imports.get(&module).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&Module, BTreeSet<Module>> =
        modules.iter().map(|&m| (m, reach(m))).collect();
    let mut circles: Vec<Vec<Module>> = Vec::new();
    let mut placed = BTreeSet::new();
    for &module in &modules {
        if placed.contains(module) || !reached[module].contains(module) {
            continue;
        }
        let circle: Vec<Module> = modules
            .iter()
            .filter(|&&other| reached[module].contains(other) && reached[other].contains(module))
            .map(|&other| other.clone())
            .collect();
        placed.extend(circle.iter().cloned());
        circles.push(circle);
    }
    circles
}

/// The module `super::` names in `module`'s file: its parent (for a
/// `mod.rs`, `lib.rs` or `main.rs`, the module itself is the directory, so
/// `super` is its parent too).
fn parent_of(module: &str) -> Vec<String> {
    let mut segments: Vec<String> = module
        .split("::")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    segments.pop();
    segments
}

/// The deepest module file `start` + `segments` names (`super` steps up).
fn resolve(
    files: &BTreeMap<Module, PathBuf>,
    start: Vec<String>,
    segments: &[String],
) -> Option<Module> {
    let mut path = start;
    let mut deepest = None;
    for segment in segments {
        if segment == "super" {
            path.pop();
            continue;
        }
        path.push(segment.clone());
        let name = path.join("::");
        if files.contains_key(&name) {
            deepest = Some(name);
        } else {
            break;
        }
    }
    deepest
}

/// `ancestor` is `module` or one of its parents.
fn is_ancestor(ancestor: &str, module: &str) -> bool {
    ancestor.is_empty() || module == ancestor || module.starts_with(&format!("{ancestor}::"))
}

/// A file's lines, and whether its first lines give a reason for them.
fn long_without_reason(file: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(file).expect("a source file");
    let lines = text.lines().count();
    let reason = text
        .lines()
        .take(30)
        .any(|line| line.trim_start().starts_with("//! Long:"));
    (lines > LONG_LINES && !reason).then_some(lines)
}

/// Every crate's graph, by crate name.
fn graphs() -> Vec<(&'static str, CrateGraph)> {
    let root = workspace();
    CRATES
        .iter()
        .map(|(name, dir)| (*name, CrateGraph::read(&root.join(dir))))
        .collect()
}

#[test]
fn no_import_circle_between_files() {
    let mut problems = Vec::new();
    for (name, graph) in graphs() {
        for circle in graph.circles() {
            problems.push(format!(
                "an import circle in {name}: {} (move the piece they share down, or turn a call \
                 around; `house::print_circles` shows the edges)",
                circle.join(" <-> ")
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_circle_between_concepts() {
    let mut problems = Vec::new();
    for (name, graph) in graphs() {
        for circle in circles_of(&graph.top_level()) {
            problems.push(format!(
                "a circle of concepts in {name}: {} (`house::print_top_level` shows the edges)",
                circle.join(" <-> ")
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_long_file_without_a_reason() {
    let root = workspace();
    let mut problems = Vec::new();
    for (_, graph) in graphs() {
        for file in graph.files.values() {
            if let Some(lines) = long_without_reason(file) {
                let relative = file.strip_prefix(&root).expect("in the workspace");
                problems.push(format!(
                    "{}: {lines} lines, over {LONG_LINES}: split it where it does more than one \
                     job, or say at its top why not (`//! Long: ...`)",
                    relative.display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_circle_is_found_and_a_floor_plan_has_none() {
    let graph = |edges: &[(&str, &str)]| {
        let mut imports: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        for (from, to) in edges {
            imports
                .entry(from.to_string())
                .or_default()
                .insert(to.to_string());
            imports.entry(to.to_string()).or_default();
        }
        imports
    };
    let circle = graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]);
    assert_eq!(circles_of(&circle), vec![vec!["a", "b", "c"]]);
    let floors = graph(&[("a", "b"), ("b", "c"), ("a", "c"), ("c", "d")]);
    assert!(circles_of(&floors).is_empty());
    let text = "x\n".repeat(LONG_LINES + 1);
    let dir = std::env::temp_dir().join(format!("house-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let long = dir.join("long.rs");
    std::fs::write(&long, &text).expect("a temporary file");
    assert!(long_without_reason(&long).is_some());
    std::fs::write(&long, format!("//! Long: one job.\n{text}")).expect("a temporary file");
    assert!(long_without_reason(&long).is_none());
    std::fs::remove_dir_all(&dir).expect("removed");
}

#[test]
fn paths_in_code_are_read_and_comments_and_strings_are_not() {
    let code =
        code_of("use crate::a::{b::C, d};\n// crate::x::y\nlet s = \"crate::z\"; super::e::f();");
    let paths = named_paths(&code);
    let written: Vec<(bool, String)> = paths.iter().map(|(c, s)| (*c, s.join("::"))).collect();
    assert_eq!(
        written,
        vec![
            (true, "a::b::C".to_string()),
            (true, "a::d".to_string()),
            (false, "e::f".to_string()),
        ]
    );
    let files: BTreeMap<Module, PathBuf> = ["", "a", "a::b", "e"]
        .iter()
        .map(|m| (m.to_string(), PathBuf::new()))
        .collect();
    let segments = |text: &str| text.split("::").map(String::from).collect::<Vec<_>>();
    assert_eq!(
        resolve(&files, Vec::new(), &segments("a::b::C")),
        Some("a::b".into())
    );
    assert_eq!(
        resolve(&files, vec!["a".into()], &segments("super::e::f")),
        Some("e".into())
    );
    assert!(is_ancestor("a", "a::b") && is_ancestor("", "e") && !is_ancestor("a", "ab"));
}

/// `cargo test --test suite house::print_circles -- --ignored --nocapture`:
/// each circle's edges (which file imports which), to see where to cut.
#[test]
#[ignore = "a tool: prints the circles' edges"]
fn print_circles() {
    for (name, graph) in graphs() {
        for circle in graph.circles() {
            println!("{name} circle:");
            let members: BTreeSet<&Module> = circle.iter().collect();
            for module in &circle {
                let inside: Vec<&Module> = graph.imports[module]
                    .iter()
                    .filter(|m| members.contains(m))
                    .collect();
                println!("  {module} -> {inside:?}");
            }
        }
    }
}

/// `cargo test --test suite house::print_top_level -- --ignored --nocapture`:
/// each crate's top-level modules and the top-level modules they import.
#[test]
#[ignore = "a tool: prints the top-level import graph"]
fn print_top_level() {
    for (name, graph) in graphs() {
        println!("{name}:");
        for (top, imports) in graph.top_level() {
            println!("  {top} -> {imports:?}");
        }
    }
}

/// The workspace crates `manifest` depends on, in any dependency table
/// (`[dependencies]`, `[dev-dependencies]`, `[target.'cfg(..)'.dependencies]`).
fn workspace_dependencies(manifest: &toml::Table) -> BTreeSet<String> {
    let names: BTreeSet<&str> = CRATE_FLOORS.iter().map(|(name, _, _)| *name).collect();
    let mut found = BTreeSet::new();
    let mut tables: Vec<&toml::Table> = vec![manifest];
    if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
        tables.extend(targets.values().filter_map(|t| t.as_table()));
    }
    for table in tables {
        for (key, value) in table {
            if !key.ends_with("dependencies") {
                continue;
            }
            let Some(dependencies) = value.as_table() else {
                continue;
            };
            found.extend(
                dependencies
                    .keys()
                    .filter(|name| names.contains(name.as_str()))
                    .cloned(),
            );
        }
    }
    found
}

#[test]
fn every_crate_depends_only_on_lower_floors() {
    let root = workspace();
    let floor_of: BTreeMap<&str, usize> = CRATE_FLOORS
        .iter()
        .map(|(name, _, floor)| (*name, *floor))
        .collect();
    let mut problems = Vec::new();
    for (name, dir, floor) in CRATE_FLOORS {
        let path = root.join(dir).join("Cargo.toml");
        let text = std::fs::read_to_string(&path).expect("a manifest");
        let manifest: toml::Table = text.parse().expect("a TOML manifest");
        let declared = manifest["package"]["name"]
            .as_str()
            .expect("a package name");
        assert_eq!(
            declared,
            name,
            "{}: CRATE_FLOORS names it wrongly",
            path.display()
        );
        for dependency in workspace_dependencies(&manifest) {
            if floor_of[dependency.as_str()] >= floor {
                problems.push(format!(
                    "{name} (floor {floor}) depends on {dependency} (floor {}): not a lower floor",
                    floor_of[dependency.as_str()]
                ));
            }
        }
    }
    let members: BTreeSet<String> = CRATES.iter().map(|(name, _)| name.to_string()).collect();
    let floored: BTreeSet<String> = CRATE_FLOORS.iter().map(|(n, _, _)| n.to_string()).collect();
    assert_eq!(
        members, floored,
        "CRATES and CRATE_FLOORS name the same crates"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `cargo test --test suite house::print_floors -- --ignored --nocapture`:
/// each crate's files by floor (a file's floor is one above the highest
/// floor it imports; 0 when it imports none), for ARCHITECTURE.md.
#[test]
#[ignore = "a tool: prints the files' floors"]
fn print_floors() {
    for (name, graph) in graphs() {
        print_by_floor(name, floors_of(&graph.imports));
    }
}

/// `name`'s modules (the crate root left out) a line per floor, bottom up.
fn print_by_floor(name: &str, floors: BTreeMap<Module, usize>) {
    let mut by_floor: BTreeMap<usize, Vec<Module>> = BTreeMap::new();
    for (module, floor) in floors.into_iter().filter(|(m, _)| !m.is_empty()) {
        by_floor.entry(floor).or_default().push(module);
    }
    println!("{name}:");
    for (floor, modules) in by_floor {
        println!("  {floor}: {}", modules.join(", "));
    }
}

/// The floors of a graph with no circle: a node's floor is one above the
/// highest floor it imports (0 when it imports none).
fn floors_of(imports: &BTreeMap<Module, BTreeSet<Module>>) -> BTreeMap<Module, usize> {
    let mut floors: BTreeMap<Module, usize> = BTreeMap::new();
    while floors.len() < imports.len() {
        let before = floors.len();
        for (module, targets) in imports {
            if floors.contains_key(module) || !targets.iter().all(|m| floors.contains_key(m)) {
                continue;
            }
            let floor = targets.iter().map(|m| floors[m] + 1).max().unwrap_or(0);
            floors.insert(module.clone(), floor);
        }
        assert!(floors.len() > before, "a circle (see print_circles)");
    }
    floors
}

/// `cargo test --test suite house::print_concept_floors -- --ignored --nocapture`:
/// each crate's concepts (top-level modules) by floor, for ARCHITECTURE.md.
#[test]
#[ignore = "a tool: prints the concepts' floors"]
fn print_concept_floors() {
    for (name, graph) in graphs() {
        print_by_floor(name, floors_of(&graph.top_level()));
    }
}
