//! The documents a newcomer reads stay true to the tree: ARCHITECTURE.md is a short map whose
//! links and code paths exist and which links every decision file under `docs/decisions/`; the
//! headline table of BENCHMARKS.md names each figure once, each with a command that exists.

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

/// The spans between backticks (inline code, which may run over a line end), outside fenced
/// blocks.
fn code_spans(text: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    let parts: Vec<&str> = prose.split('`').collect();
    parts
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 2 == 1 && i + 1 < parts.len())
        .map(|(_, p)| p.replace('\n', " "))
        .collect()
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

/// The rooms of the host's layering test (`LAYERS` in host/tests/layers.rs).
fn layer_rooms() -> Vec<String> {
    let source = read("host/tests/layers.rs");
    let start = source.find("const LAYERS").expect("LAYERS in layers.rs");
    let table = &source[start..];
    let table = &table[..table.find("];").expect("the end of LAYERS")];
    table
        .split('"')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

#[test]
fn the_maps_room_table_names_every_room_the_layering_test_knows() {
    let map = read("ARCHITECTURE.md");
    let mut fenced = false;
    let mut names = BTreeSet::new();
    for line in map.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if fenced {
            names.extend(
                line.split(|c: char| c.is_whitespace() || c == ',')
                    .map(str::to_string),
            );
        }
    }
    let rooms = layer_rooms();
    assert!(rooms.len() > 10, "rooms: {rooms:?}");
    let missing: Vec<&String> = rooms.iter().filter(|r| !names.contains(*r)).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's room table lacks {missing:?} (host/tests/layers.rs has them)"
    );
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

/// The rows of the first table after the heading `## Headline figures`: cells, trimmed.
fn headline_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("## ") {
            if inside && !rows.is_empty() {
                break;
            }
            inside = line.trim() == "## Headline figures";
            continue;
        }
        if !inside {
            continue;
        }
        let l = line.trim();
        if !l.starts_with('|') {
            if !rows.is_empty() {
                break;
            }
            continue;
        }
        let cells: Vec<String> = l
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect();
        if cells
            .iter()
            .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
        {
            continue;
        }
        rows.push(cells);
    }
    rows
}

/// The bench targets of the workspace: `benches/*.rs` of the root package and of each member.
fn bench_targets(root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for dir in [
        "benches",
        "engine/benches",
        "formats/benches",
        "host/benches",
    ] {
        if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(stem) = name.strip_suffix(".rs") {
                    out.insert(stem.to_string());
                }
            }
        }
    }
    out
}

/// Whether `command` (one headline row's) runs something that exists: a script of `scripts/`, a
/// bench target (`cargo bench --bench NAME`) or a test target (`cargo test --test NAME`, or a
/// test name filter of the suite).
fn command_exists(root: &Path, command: &str) -> Result<(), String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let Some(first) = words.first() else {
        return Err("no command".into());
    };
    if first.starts_with("scripts/") {
        return if root.join(first).is_file() {
            Ok(())
        } else {
            Err(format!("{first} does not exist"))
        };
    }
    if *first != "cargo" {
        return Err(format!("`{command}` is neither a script nor cargo"));
    }
    let after = |flag: &str| {
        words
            .iter()
            .position(|w| *w == flag)
            .and_then(|i| words.get(i + 1))
            .copied()
    };
    match words.get(1).copied() {
        Some("bench") => {
            let Some(name) = after("--bench") else {
                return Err(format!("`{command}` names no --bench target"));
            };
            if bench_targets(root).contains(name) {
                Ok(())
            } else {
                Err(format!("no bench target {name}"))
            }
        }
        Some("test") => {
            let Some(name) = after("--test") else {
                return Ok(());
            };
            let candidates = [
                format!("tests/{name}.rs"),
                format!("host/tests/{name}.rs"),
                format!("engine/tests/{name}.rs"),
                format!("formats/tests/{name}.rs"),
            ];
            if candidates.iter().any(|c| root.join(c).is_file()) {
                Ok(())
            } else {
                Err(format!("no test target {name}"))
            }
        }
        _ => Err(format!(
            "`{command}`: only cargo bench and cargo test are figures"
        )),
    }
}

#[test]
fn the_headline_figures_are_each_listed_once_with_a_command_that_exists() {
    let text = read("BENCHMARKS.md");
    let rows = headline_rows(&text);
    assert!(
        rows.len() > 5,
        "BENCHMARKS.md has a headline table: {rows:?}"
    );
    let head = &rows[0];
    let col = |name: &str| {
        head.iter()
            .position(|h| h.to_lowercase() == name)
            .unwrap_or_else(|| panic!("the headline table has a column {name}: {head:?}"))
    };
    let (what, figure, target, command, date, commit) = (
        col("what"),
        col("figure"),
        col("target"),
        col("command"),
        col("date"),
        col("commit"),
    );
    let root = root();
    let mut seen = BTreeSet::new();
    let mut wrong = Vec::new();
    for row in &rows[1..] {
        let cell = |i: usize| row.get(i).map(String::as_str).unwrap_or("");
        let name = cell(what);
        if !seen.insert(name.to_lowercase()) {
            wrong.push(format!("{name}: listed twice"));
        }
        for (i, c) in [(figure, "figure"), (target, "target")] {
            if cell(i).is_empty() {
                wrong.push(format!("{name}: no {c}"));
            }
        }
        let spans = code_spans(cell(command));
        if spans.is_empty() {
            wrong.push(format!("{name}: no command in backticks"));
        }
        for c in spans {
            if let Err(e) = command_exists(&root, &c) {
                wrong.push(format!("{name}: {e}"));
            }
        }
        let d = cell(date);
        let is_date = d.len() == 10
            && d.chars().enumerate().all(|(i, ch)| {
                if i == 4 || i == 7 {
                    ch == '-'
                } else {
                    ch.is_ascii_digit()
                }
            });
        if !is_date {
            wrong.push(format!("{name}: date {d:?} is not YYYY-MM-DD"));
        }
        let h = cell(commit).trim_matches('`');
        if !(7..=40).contains(&h.len()) || !h.chars().all(|c| c.is_ascii_hexdigit()) {
            wrong.push(format!("{name}: commit {h:?} is not a hash"));
        }
    }
    assert!(
        wrong.is_empty(),
        "BENCHMARKS.md headline table:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_checks_see_a_missing_path_and_a_missing_command() {
    let text = "See [x](docs/decisions/nowhere.md) and `engine/src/gone.rs`, `lines.rs`, `a\nb`, \
                `Object::Original`.\n```\n`host/src/in_a_fence.rs`\n```\nand `src/x.rs`\n";
    assert_eq!(links(text), vec!["docs/decisions/nowhere.md"]);
    assert_eq!(
        code_paths(text),
        vec!["engine/src/gone.rs", "lines.rs", "src/x.rs"]
    );
    let root = root();
    assert!(command_exists(&root, "scripts/quality").is_ok());
    assert!(command_exists(&root, "scripts/no-such-script").is_err());
    assert!(command_exists(&root, "cargo bench --bench layout -- layout_10h").is_ok());
    assert!(command_exists(&root, "cargo bench --bench nothing").is_err());
    assert!(command_exists(&root, "cargo test --release --test main -- web::").is_ok());
    assert!(command_exists(&root, "cargo test --test nothing").is_err());
    assert!(command_exists(&root, "make it fast").is_err());
    let table = "## Headline figures\n\n| what | figure |\n| --- | --- |\n| a | 1 |\n| b | 2 |\n\n## Next\n| c | 3 |\n";
    assert_eq!(headline_rows(table).len(), 3);
}
