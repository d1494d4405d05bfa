//! The host's rooms are layered: a module may use modules of its own room and of rooms below it,
//! never one above (ARCHITECTURE.md, "Floors and rooms"). This test reads every source file of the
//! host and checks each `crate::` path against the table below, so a new upward import fails the
//! build's tests rather than waiting for a reviewer.

use std::path::{Path, PathBuf};

/// The rooms, top first. A room is a top-level module, except that `http::server` (the router,
/// which imports the handlers) sits above the handlers while the rest of `http` (the state and
/// helpers the handlers share) sits below them.
const LAYERS: &[&[&str]] = &[
    &["cli"],
    &["admin", "submit"],
    &["http::server"],
    &["web"],
    &["api"],
    &["http"],
    &["backend", "pipeline"],
    &["store", "media"],
    &[
        "billing", "words", "redact", "json", "child", "util", "ops", "tls",
    ],
];

fn rank(room: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&room))
}

/// The room of a source file (path relative to host/src).
fn room_of_file(rel: &Path) -> String {
    let parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.as_slice() {
        [first, second, ..] if first == "http" && second == "server" => "http::server".into(),
        [first, ..] => first.clone(),
        [] => String::new(),
    }
}

/// The room a `crate::a::b` path names.
fn room_of_path(path: &[&str]) -> String {
    match path {
        ["http", "server", ..] => "http::server".into(),
        [first, ..] => first.to_string(),
        [] => String::new(),
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `crate::...` path of the code (comments left out), with its line number.
fn crate_paths(source: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let tail = &rest[at + "crate::".len()..];
            let path: Vec<String> = tail
                .split("::")
                .map(|seg| {
                    seg.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect::<String>()
                })
                .take_while(|seg| !seg.is_empty())
                .take(2)
                .collect();
            // `crate::{a, b}` names several rooms: each is checked.
            if let Some(group) = tail.strip_prefix('{') {
                for item in group.split('}').next().unwrap_or("").split(',') {
                    let seg: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !seg.is_empty() {
                        found.push((n + 1, vec![seg]));
                    }
                }
            } else if !path.is_empty() {
                found.push((n + 1, path));
            }
            rest = tail;
        }
    }
    found
}

#[test]
fn no_module_of_the_host_imports_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "found the sources: {}", files.len());
    let mut wrong = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        if rel == Path::new("lib.rs") {
            continue;
        }
        let room = room_of_file(rel);
        let Some(own) = rank(&room) else {
            wrong.push(format!("{}: room {room} is in no layer", rel.display()));
            continue;
        };
        let source = std::fs::read_to_string(file).expect("read");
        for (line, path) in crate_paths(&source) {
            let parts: Vec<&str> = path.iter().map(String::as_str).collect();
            let target = room_of_path(&parts);
            if target == room || target == "ApiError" {
                continue;
            }
            match rank(&target) {
                Some(r) if r >= own => {}
                Some(_) => wrong.push(format!(
                    "{}:{line}: {room} uses crate::{}, a room above it",
                    rel.display(),
                    path.join("::")
                )),
                None => wrong.push(format!(
                    "{}:{line}: crate::{} is in no layer",
                    rel.display(),
                    path.join("::")
                )),
            }
        }
    }
    assert!(wrong.is_empty(), "upward imports:\n{}", wrong.join("\n"));
}

#[test]
fn the_checker_sees_an_upward_import() {
    let paths = crate_paths("use crate::http::server::run; // crate::web is only a comment\n");
    assert_eq!(
        paths,
        vec![(1, vec!["http".to_string(), "server".to_string()])]
    );
    let room = room_of_path(&["http", "server"]);
    assert!(
        rank(&room) < rank("api"),
        "the router is above the handlers"
    );
    assert!(
        rank("store") > rank("pipeline"),
        "the store is below the pipeline"
    );
    assert_eq!(room_of_file(Path::new("http/server.rs")), "http::server");
    assert_eq!(room_of_file(Path::new("http/mod.rs")), "http");
    assert_eq!(room_of_file(Path::new("store/sqlite/web.rs")), "store");
}
