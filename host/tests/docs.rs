//! The documents a newcomer reads stay true to the tree: ARCHITECTURE.md is a short map whose
//! links and code paths exist and which links every decision file under `docs/decisions/`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The map's length limit: about what rust-analyzer's architecture document needs for a codebase
/// ten times larger.
const MAP_WORDS: usize = 4000;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Markdown link targets `[text](target)`, without a `#fragment`; web addresses left out.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let tail = &rest[at + 2..];
        let Some(end) = tail.find(')') else { break };
        let target = tail[..end].split('#').next().unwrap_or("").trim();
        if !target.is_empty() && !target.contains("://") {
            out.push(target.to_string());
        }
        rest = &tail[end..];
    }
    out
}

/// The spans between backticks (inline code), outside fenced blocks.
fn code_spans(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let parts: Vec<&str> = line.split('`').collect();
        for (i, part) in parts.iter().enumerate() {
            if i % 2 == 1 && i + 1 < parts.len() {
                out.push(part.to_string());
            }
        }
    }
    out
}

/// The top-level folders of the repository a code path may start with.
const TOP: &[&str] = &[
    "engine/", "formats/", "host/", "src/", "pgtest/", "tests/", "scripts/", "benches/", "fuzz/",
    "golden/", "corpus/", "quality/", "docs/",
];

/// Code spans that name a path of the repository: they start at a top-level folder, or are a
/// bare source file name (`server.rs`), which must then exist somewhere in the crates.
fn code_paths(text: &str) -> Vec<String> {
    code_spans(text)
        .into_iter()
        .filter(|s| !s.contains(' ') && !s.contains('*') && !s.contains('{'))
        .filter(|s| {
            TOP.iter().any(|t| s.starts_with(t))
                || [".rs", ".py", ".js", ".css", ".sha256"]
                    .iter()
                    .any(|e| s.ends_with(e) && !s.contains('/'))
        })
        .collect()
}

fn file_names(dir: &Path, out: &mut BTreeSet<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            file_names(&path, out);
        } else {
            out.insert(entry.file_name().to_string_lossy().into_owned());
        }
    }
}

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

fn decision_files() -> Vec<String> {
    let dir = root().join("docs/decisions");
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .expect("docs/decisions")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    out.sort();
    out
}

#[test]
fn the_map_is_short() {
    let n = words(&read("ARCHITECTURE.md"));
    assert!(
        n <= MAP_WORDS,
        "ARCHITECTURE.md has {n} words, over {MAP_WORDS}: move decisions to docs/decisions/"
    );
}

#[test]
fn the_map_links_every_decision_file_and_names_only_paths_that_exist() {
    let map = read("ARCHITECTURE.md");
    let root = root();
    let mut wrong = Vec::new();
    let linked: BTreeSet<String> = links(&map).into_iter().collect();
    for target in &linked {
        if !root.join(target).exists() {
            wrong.push(format!("link to {target}, which does not exist"));
        }
    }
    let decisions = decision_files();
    assert!(decisions.len() >= 5, "decision files: {decisions:?}");
    for name in &decisions {
        if !linked.contains(&format!("docs/decisions/{name}")) {
            wrong.push(format!("docs/decisions/{name} is not linked from the map"));
        }
    }
    let mut names = BTreeSet::new();
    for dir in ["engine/src", "formats/src", "host/src", "src", "pgtest/src"] {
        file_names(&root.join(dir), &mut names);
    }
    let paths = code_paths(&map);
    assert!(paths.len() > 20, "the map names code paths: {paths:?}");
    for path in paths {
        let exists = if path.contains('/') {
            root.join(path.trim_end_matches('/')).exists()
        } else {
            names.contains(&path)
        };
        if !exists {
            wrong.push(format!("the map names `{path}`, which does not exist"));
        }
    }
    assert!(wrong.is_empty(), "ARCHITECTURE.md:\n{}", wrong.join("\n"));
}

#[test]
fn the_decision_files_link_only_what_exists() {
    let root = root();
    let mut wrong = Vec::new();
    for name in decision_files() {
        let text = read(&format!("docs/decisions/{name}"));
        assert!(text.starts_with("# "), "{name} opens with its title");
        for target in links(&text) {
            if !root.join("docs/decisions").join(&target).exists() {
                wrong.push(format!("docs/decisions/{name}: link to {target}"));
            }
        }
        for path in code_paths(&text) {
            if path.contains('/')
                && TOP.iter().any(|t| path.starts_with(t))
                && !root.join(path.trim_end_matches('/')).exists()
            {
                wrong.push(format!("docs/decisions/{name}: `{path}` does not exist"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_checks_see_a_missing_link_and_path() {
    let text = "See [x](docs/decisions/nowhere.md) and `engine/src/gone.rs`, `lines.rs`, \
                `a b`, `Object::Original`.\n```\n`host/src/in_a_fence.rs`\n```\n";
    assert_eq!(links(text), vec!["docs/decisions/nowhere.md"]);
    assert_eq!(code_paths(text), vec!["engine/src/gone.rs", "lines.rs"]);
}
