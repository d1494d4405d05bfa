//! No two source files import each other (ARCHITECTURE.md, "Floors and rooms"). A pair of files
//! that use each other's items is one piece of code cut in two at the wrong place: the shared
//! piece belongs in a file below both. This test reads every source file of the engine, the
//! formats, the host and the command line, resolves each path that names another module of the
//! same crate (`use crate::a::b`, `use super::c`, `self::`, a child module by its name, and the
//! same paths written inline, as in `super::lines::cost(..)`) to the file that holds it, and fails
//! on any pair of files that point at each other.
//!
//! A module's own file and the files of the modules inside it are not peers: the parent declares
//! its children and re-exports their items, and the children use the types the parent defines
//! for all of them (`layout/mod.rs` and `layout/lines.rs`). Those edges are left out; every pair
//! of siblings, cousins or strangers counts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates' source folders, from the workspace root.
const CRATES: &[&str] = &["engine/src", "formats/src", "host/src", "src"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
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

/// The module path of a file relative to its crate's `src` (`lib.rs`/`main.rs` -> `[]`,
/// `a/mod.rs` and `a.rs` -> `[a]`, `a/b.rs` -> `[a, b]`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    }
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The source with comments, string, byte-string, raw-string and character literals blanked (a
/// literal becomes `""`), so braces and paths inside them are not read as code.
fn code_only(source: &str) -> String {
    let c: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c[i] == 'r'
            && (next == Some('"') || next == Some('#'))
            && !c
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string r"..." or r#"..."# (or an identifier starting with r).
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (0..hashes).all(|h| c.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c[i] == '\'' {
            // A character literal ('x', '\n', '\u{..}'); a lifetime ('a) stays.
            if next == Some('\\') {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push('\'');
                i += 1;
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Paths written in `code` that may name a module of the crate, each with the module the code
/// is in (inline `mod name { .. }` blocks counted). A `use` tree is expanded into its paths;
/// elsewhere a path is a run of `ident::ident::..` starting at `crate`, `super` or `self`, or at
/// a name the caller recognises as a child module.
fn paths(code: &str, module: &[String]) -> Vec<(Vec<String>, Vec<String>)> {
    let tokens = tokenize(code);
    let mut found = Vec::new();
    // Inline modules: (name, brace depth at which it closes).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let here = |inline: &Vec<(String, usize)>| {
        let mut m = module.to_vec();
        m.extend(inline.iter().map(|(n, _)| n.clone()));
        m
    };
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i].as_str();
        match t {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            "mod" if tokens.get(i + 2).is_some_and(|b| b == "{") => {
                inline.push((tokens[i + 1].clone(), depth));
                depth += 1;
                i += 3;
                continue;
            }
            "use" => {
                let end = tokens[i..]
                    .iter()
                    .position(|t| t == ";")
                    .map_or(tokens.len(), |p| i + p);
                let mut out = Vec::new();
                use_tree(&tokens[i + 1..end], Vec::new(), &mut out);
                let m = here(&inline);
                found.extend(out.into_iter().map(|p| (m.clone(), p)));
                i = end;
                continue;
            }
            _ if is_ident(t) && tokens.get(i + 1).is_some_and(|c| c == "::") => {
                // An inline path, unless it continues one (`a::b` is read at `a`).
                let after_colons = i > 0 && tokens[i - 1] == "::";
                if !after_colons {
                    let mut p = vec![t.to_string()];
                    let mut j = i + 1;
                    while tokens.get(j).is_some_and(|c| c == "::")
                        && tokens.get(j + 1).is_some_and(|n| is_ident(n))
                    {
                        p.push(tokens[j + 1].clone());
                        j += 2;
                    }
                    found.push((here(&inline), p));
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    found
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && t.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Identifiers, `::` and single punctuation characters.
fn tokenize(code: &str) -> Vec<String> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_alphanumeric() || c[i] == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(c[start..i].iter().collect());
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else {
            if !c[i].is_whitespace() {
                out.push(c[i].to_string());
            }
            i += 1;
        }
    }
    out
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`, `a as x`, `a::*`) into its paths.
fn use_tree(tokens: &[String], prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i].as_str();
        match t {
            "::" => {}
            "{" => {
                // Split the group at its top-level commas.
                let mut depth = 0;
                let mut start = i + 1;
                let mut j = i + 1;
                while j < tokens.len() {
                    match tokens[j].as_str() {
                        "{" => depth += 1,
                        "}" if depth == 0 => break,
                        "}" => depth -= 1,
                        "," if depth == 0 => {
                            use_tree(&tokens[start..j], path.clone(), out);
                            start = j + 1;
                        }
                        _ => {}
                    }
                    j += 1;
                }
                use_tree(&tokens[start..j.min(tokens.len())], path.clone(), out);
                return;
            }
            "as" | "*" => break,
            _ if is_ident(t) => path.push(t.to_string()),
            _ => {}
        }
        i += 1;
    }
    if !path.is_empty() {
        out.push(path);
    }
}

/// One crate: every file by its module path.
struct Crate {
    files: BTreeMap<Vec<String>, PathBuf>,
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut paths = Vec::new();
        rust_files(src, &mut paths);
        let mut files = BTreeMap::new();
        for p in paths {
            let rel = p.strip_prefix(src).expect("under src").to_path_buf();
            files.insert(module_of(&rel), rel);
        }
        Crate { files }
    }

    /// The file holding what `path`, written in module `here`, names; `None` for another
    /// crate's path (`std::..`, `cuecraft_engine::..`) or a local name that is not a module.
    fn resolve(&self, here: &[String], path: &[String]) -> Option<&PathBuf> {
        let mut base: Vec<String> = here.to_vec();
        let mut rest = path;
        match path.first().map(String::as_str) {
            Some("crate") => {
                base.clear();
                rest = &path[1..];
            }
            Some("self") => rest = &path[1..],
            Some("super") => {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            Some(_) => {
                // A child module by its name (2018 paths), else not ours.
                let mut child = here.to_vec();
                child.push(path[0].clone());
                self.files.get(&child)?;
            }
            None => return None,
        }
        // The deepest module of the path that is a file; inline modules belong to theirs.
        while !self.files.contains_key(&base) {
            base.pop();
        }
        let mut file = self.files.get(&base);
        for seg in rest {
            base.push(seg.clone());
            match self.files.get(&base) {
                Some(f) => file = Some(f),
                None => break,
            }
        }
        file
    }
}

/// Whether the file `a` holds the module of `b` or one around it (or the other way round).
fn nested(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// Every pair of files of the crate under `src` that import each other, with the paths that tie
/// them.
fn circles(src: &Path) -> Vec<String> {
    let krate = Crate::read(src);
    let module_of_file: BTreeMap<&PathBuf, &Vec<String>> =
        krate.files.iter().map(|(m, f)| (f, m)).collect();
    // (from, to) -> the paths.
    let mut edges: BTreeMap<(PathBuf, PathBuf), BTreeSet<String>> = BTreeMap::new();
    for (module, rel) in &krate.files {
        let source = std::fs::read_to_string(src.join(rel)).expect("read");
        for (here, path) in paths(&code_only(&source), module) {
            let Some(target) = krate.resolve(&here, &path) else {
                continue;
            };
            if target == rel || nested(module, module_of_file[target]) {
                continue;
            }
            edges
                .entry((rel.clone(), target.clone()))
                .or_default()
                .insert(path.join("::"));
        }
    }
    let mut found = Vec::new();
    for ((a, b), there) in &edges {
        if a < b {
            if let Some(back) = edges.get(&(b.clone(), a.clone())) {
                found.push(format!(
                    "{0} <-> {1}: {0} uses {2}; {1} uses {3}",
                    a.display(),
                    b.display(),
                    there.iter().cloned().collect::<Vec<_>>().join(", "),
                    back.iter().cloned().collect::<Vec<_>>().join(", "),
                ));
            }
        }
    }
    found
}

#[test]
fn no_two_source_files_import_each_other() {
    let root = workspace();
    let mut wrong = Vec::new();
    let mut seen = 0;
    for krate in CRATES {
        let src = root.join(krate);
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        seen += files.len();
        wrong.extend(circles(&src).into_iter().map(|c| format!("{krate}: {c}")));
    }
    assert!(seen > 80, "found the sources: {seen}");
    assert!(
        wrong.is_empty(),
        "files importing each other:\n{}",
        wrong.join("\n")
    );
}

/// The three circles the layout, the formats and the Postgres store once had, written small:
/// each must be seen.
#[test]
fn the_checker_sees_each_way_files_import_each_other() {
    let dir = std::env::temp_dir().join(format!("cuecraft-circles-{}", std::process::id()));
    let files: &[(&str, &str)] = &[
        // Siblings through `super::`, one of them inline in a call.
        ("layout/mod.rs", "mod lines; mod segment; pub struct Params;"),
        (
            "layout/lines.rs",
            "use super::segment::{pre, suf};\nuse super::Params;",
        ),
        (
            "layout/segment.rs",
            "use super::Params;\nfn f() { let c = super::lines::line_break_cost(p, u); }",
        ),
        // Through `crate::`, once in a `use`, once inline.
        ("common.rs", "fn h() { let o = crate::controls::options(opts); }"),
        (
            "controls.rs",
            "// crate::nothing in a comment\nuse crate::common::any_byte;",
        ),
        // A group of `super::` items, one of them a module; a function of the other file.
        ("store/mod.rs", "mod pages; mod store;"),
        (
            "store/pages.rs",
            "fn pg(e: E) -> S { super::store::from_pg(e) }",
        ),
        (
            "store/store.rs",
            "use super::{ledger, pages, PgError};\nfn w() { pages::replace_words(); }\n#[cfg(test)]\nmod tests { use super::*; use super::super::pages; }",
        ),
        // Parent and child, and a child's inline tests using the parent: no circle.
        ("lib.rs", "mod layout; mod common; mod controls; mod store; mod quiet; use quiet::A;"),
        ("quiet.rs", "use crate::A; const S: &str = \"crate::common::x\"; const C: char = '{';"),
    ];
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    let found = circles(&dir);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].starts_with("common.rs <-> controls.rs"),
        "{}",
        found[0]
    );
    assert!(
        found[1].starts_with("layout/lines.rs <-> layout/segment.rs"),
        "{}",
        found[1]
    );
    assert!(
        found[2].starts_with("store/pages.rs <-> store/store.rs"),
        "{}",
        found[2]
    );
}
