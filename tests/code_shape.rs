//! The code keeps the shape the design map promises: no file over 500 lines, at most 0.45
//! comment lines per code line in the library outside tests, no circle of imports inside a
//! folder, no doc comment that says a line twice, no deprecated item, at most 30 items at the
//! crate root; in the library, its loom models, the driver, the benches, the examples and the
//! integration tests alike.

mod support;
use support::files::{read, root, rust_files, FOLDERS};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The library's Rust files, with their text.
fn sources() -> Vec<(PathBuf, String)> {
    rust_files()
        .into_iter()
        .filter(|path| path.starts_with(root().join("src")))
        .map(|path| {
            let text = read(&path);
            (path, text)
        })
        .collect()
}

/// Whether `path` holds only tests (a `tests.rs`, or a file under a `tests/` folder).
fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name == "tests.rs")
        || path.components().any(|part| part.as_os_str() == "tests")
}
/// The lines of `text` outside its `#[cfg(test)]` modules.
fn outside_test_modules(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if line.starts_with("#[cfg(test)]") || line.starts_with("#[cfg(all(test") {
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim().starts_with("#[") {
                j += 1;
            }
            if j < lines.len()
                && lines[j].trim_start().starts_with("mod ")
                && lines[j].ends_with('{')
            {
                let mut depth = 0i64;
                while j < lines.len() {
                    depth += lines[j].matches('{').count() as i64;
                    depth -= lines[j].matches('}').count() as i64;
                    j += 1;
                    if depth == 0 {
                        break;
                    }
                }
                i = j;
                continue;
            }
        }
        kept.push(lines[i]);
        i += 1;
    }
    kept
}

#[test]
fn no_rust_file_is_over_500_lines() {
    let long: Vec<String> = rust_files()
        .iter()
        .map(|path| (path, read(path).lines().count()))
        .filter(|&(_, lines)| lines > 500)
        .map(|(path, lines)| format!("{} has {lines} lines", path.display()))
        .collect();
    assert!(
        long.is_empty(),
        "files over 500 lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn comments_stay_at_most_0_45_lines_per_code_line() {
    let (mut comments, mut code) = (0usize, 0usize);
    for (path, text) in sources().iter().filter(|(path, _)| !is_test_file(path)) {
        for line in outside_test_modules(text).iter().map(|line| line.trim()) {
            match line {
                "" => {}
                _ if line.starts_with("//") => comments += 1,
                _ => code += 1,
            }
        }
        assert!(code > 0 || comments > 0, "{} is empty", path.display());
    }
    let ratio = comments as f64 / code as f64;
    assert!(
        ratio <= 0.45,
        "{comments} comment lines per {code} code lines: {ratio:.3}"
    );
}

/// The first names `text` reaches through `prefix` (`super::` or `crate::`): the name after
/// `prefix`, or each name a group after it begins with (`prefix{a::X, b}` gives a and b).
fn names_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let ident = |rest: &str| -> String {
        rest.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices(prefix) {
        if text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[at + prefix.len()..];
        let Some(group) = rest.strip_prefix('{') else {
            found.insert(ident(rest));
            continue;
        };
        let mut depth = 1;
        let mut starts = true;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 1 => break,
                '}' => depth -= 1,
                ',' if depth == 1 => starts = true,
                _ if c.is_whitespace() => {}
                _ if starts && depth == 1 => {
                    found.insert(ident(&group[i..]));
                    starts = false;
                }
                _ => {}
            }
        }
    }
    found.retain(|name| !name.is_empty());
    found
}

/// For each folder, its modules (its files and subfolders) and the modules of the same folder
/// each names: through `super::` from a file directly in the folder, and through `crate::`
/// where the folder holds its crate's root.
fn imports() -> BTreeMap<PathBuf, BTreeMap<String, BTreeSet<String>>> {
    let mut folders: BTreeMap<PathBuf, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for path in rust_files() {
        if path.file_name().is_some_and(|name| name == "tests.rs") {
            continue;
        }
        let text = read(&path);
        let code: String = outside_test_modules(&text)
            .into_iter()
            .filter(|line| !line.trim_start().starts_with("//"))
            .map(|line| format!("{line}\n"))
            .collect();
        let top = FOLDERS
            .iter()
            .map(|folder| root().join(folder))
            .find(|folder| path.starts_with(folder))
            .expect("a file of a folder checked");
        for folder in path.ancestors().skip(1).take_while(|f| f.starts_with(&top)) {
            let relative = path.strip_prefix(folder).expect("below its folder");
            let direct = relative.components().count() == 1;
            let first = relative.components().next().expect("a part");
            let module = Path::new(first.as_os_str()).file_stem().expect("a name");
            let module = module.to_string_lossy().into_owned();
            if direct && ["mod", "main", "lib"].contains(&module.as_str()) {
                continue;
            }
            let crate_root = ["main.rs", "lib.rs"]
                .iter()
                .any(|root| folder.join(root).is_file());
            let mut named = BTreeSet::new();
            if direct {
                named.extend(names_after(&code, "super::"));
            }
            if crate_root {
                named.extend(names_after(&code, "crate::"));
            }
            let modules = folders.entry(folder.to_path_buf()).or_default();
            modules.entry(module).or_default().extend(named);
        }
    }
    folders
}

#[test]
fn a_path_group_is_read_name_by_name() {
    let text = "use super::{a::X, b,\n    c::{d, e}};\nuse crate::f::G; super::h(); my_super::i";
    assert_eq!(
        names_after(text, "super::"),
        ["a", "b", "c", "h"].map(String::from).into()
    );
    assert_eq!(names_after(text, "crate::"), ["f"].map(String::from).into());
}

#[test]
fn the_files_of_a_folder_import_one_another_without_a_circle() {
    // The one circle the design map names: an entry holds its callback, whose repeating run
    // is handed its entry.
    let allowed = ("entry", "callback", "node");
    let mut circles = Vec::new();
    for (folder, modules) in &imports() {
        let folder_name = folder.file_name().unwrap().to_string_lossy();
        let edges = |module: &str| -> Vec<String> {
            modules[module]
                .iter()
                .filter(|other| modules.contains_key(*other) && *other != module)
                .filter(|other| {
                    let pair = [module, other.as_str()];
                    !(folder_name == allowed.0
                        && (pair == [allowed.1, allowed.2] || pair == [allowed.2, allowed.1]))
                })
                .cloned()
                .collect()
        };
        // Depth-first search; a module met again while on the path closes a circle.
        fn visit(
            module: &str,
            edges: &dyn Fn(&str) -> Vec<String>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(at) = path.iter().position(|m| m == module) {
                return Some(path[at..].to_vec());
            }
            if !done.insert(module.to_owned()) {
                return None;
            }
            path.push(module.to_owned());
            for next in edges(module) {
                if let Some(circle) = visit(&next, edges, path, done) {
                    return Some(circle);
                }
            }
            path.pop();
            None
        }
        let mut done = BTreeSet::new();
        for module in modules.keys() {
            if let Some(circle) = visit(module, &edges, &mut Vec::new(), &mut done) {
                circles.push(format!("{}: {}", folder.display(), circle.join(" -> ")));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "circles of imports:\n{}",
        circles.join("\n")
    );
}

/// The line numbers (from 1) of the doc-comment lines of `text` that restate the line before
/// them: both `///` or both `//!` at the same indentation, and the first three words the same
/// (a line said twice, or two drafts of one sentence). Lines in a doc's code blocks, table
/// rows and list items are left out: they may begin alike.
fn restated_doc_lines(text: &str) -> Vec<usize> {
    let mut restated = Vec::new();
    let mut in_code = false;
    let mut before: Option<(&str, Vec<&str>)> = None;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["//!", "///"]
            .into_iter()
            .find(|marker| trimmed.starts_with(marker) && !trimmed.starts_with("////"));
        let Some(marker) = marker else {
            before = None;
            continue;
        };
        let words: Vec<&str> = trimmed[marker.len()..].split_whitespace().collect();
        if words.first().is_some_and(|word| word.starts_with("```")) {
            in_code = !in_code;
            before = None;
            continue;
        }
        let prose = !in_code
            && words.len() >= 3
            && !words[0].starts_with(['|', '-', '*', '#'])
            && !words[0].ends_with(['.', ')']);
        let key = &line[..line.len() - trimmed.len() + marker.len()];
        if let Some((before_key, before_words)) = &before {
            if prose && *before_key == key && before_words[..3] == words[..3] {
                restated.push(n + 1);
            }
        }
        before = prose.then_some((key, words));
    }
    restated
}

#[test]
fn a_restated_doc_line_is_found_and_a_list_is_not() {
    // One line each, so that this file holds no doc comment of its own here.
    let text = [
        "/// Whether the queue holds no value.",
        "/// Whether the queue holds no value.",
        "fn a() {}",
        "    /// Makes room for at least `n` values more, so that",
        "    /// Makes room for `n` more values.",
        "//! - `api`: the engine's calls.",
        "//! - `api`: its tests.",
        "//! | shard | one wheel |",
        "//! | shard | its lanes |",
        "/// ```",
        "/// clock.advance(Duration::from_secs(5));",
        "/// clock.advance(Duration::from_secs(5));",
        "/// ```",
        "/// The number of values in the queue.",
        "//! The number of values in the queue.",
        "/// The number of values",
        "///",
        "/// The number of values",
    ]
    .join("\n");
    assert_eq!(restated_doc_lines(&text), [2, 5]);
}

#[test]
fn no_doc_comment_says_a_line_twice() {
    let root = root();
    let files = rust_files();
    let restated: Vec<String> = files
        .iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).expect("a readable file");
            let shown = file
                .strip_prefix(root)
                .unwrap_or(file)
                .display()
                .to_string();
            restated_doc_lines(&text)
                .into_iter()
                .map(move |line| format!("{shown}:{line}"))
        })
        .collect();
    assert!(
        restated.is_empty(),
        "{} doc-comment lines restate the line before them: {restated:?}",
        restated.len()
    );
}

#[test]
fn no_item_is_deprecated() {
    let src = root().join("src");
    for file in rust_files().iter().filter(|file| file.starts_with(&src)) {
        assert!(
            !read(file).contains("#[deprecated"),
            "{} keeps a deprecated item: remove it, with its uses",
            file.display()
        );
    }
}

/// The names `lib` (the text of `src/lib.rs`) puts at the crate root, every feature on: its
/// `pub mod`s, each name of its `pub use`s, and its other `pub` items.
fn root_items(lib: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut import = String::new();
    for line in lib.lines().map(str::trim) {
        if line.starts_with("//") {
            continue;
        }
        if depth == 0 && (line.starts_with("pub use ") || !import.is_empty()) {
            import.push_str(line);
            import.push(' ');
            if !line.ends_with(';') {
                continue;
            }
            let path = import["pub use ".len()..].trim_end_matches([';', ' ']);
            let names = match path.split_once('{') {
                Some((_, group)) => group.trim_end_matches('}').split(',').collect(),
                None => vec![path],
            };
            for name in names
                .iter()
                .map(|name| name.trim())
                .filter(|name| !name.is_empty())
            {
                let last = name.rsplit([':', ' ']).next().expect("a name");
                items.push(last.to_owned());
            }
            import.clear();
            continue;
        }
        if depth == 0 {
            let mut words = line.split_whitespace();
            if words.next() == Some("pub") {
                let kinds = [
                    "mod", "fn", "struct", "enum", "type", "trait", "const", "static",
                ];
                if words.next().is_some_and(|kind| kinds.contains(&kind)) {
                    let name = words.next().expect("an item's name");
                    let name = name
                        .split(['<', '(', ':', ';', ' '])
                        .next()
                        .expect("a name");
                    items.push(name.to_owned());
                }
            }
        }
        depth += line.matches('{').count();
        depth -= line.matches('}').count();
    }
    items
}

#[test]
fn the_root_items_are_read_from_lib_rs() {
    let lib = [
        "//! pub use not::Counted;",
        "pub mod design;",
        "pub mod stats {",
        "    pub use crate::engine::{Lateness, Stats};",
        "}",
        "mod private;",
        "pub use engine::api::TimerEngine;",
        "pub use engine::global::{",
        "    interval, now as clock_now,",
        "    sleep,",
        "};",
        "pub fn free<F>(f: F) {}",
    ]
    .join("\n");
    assert_eq!(
        root_items(&lib),
        [
            "design",
            "stats",
            "TimerEngine",
            "interval",
            "clock_now",
            "sleep",
            "free"
        ]
    );
}

#[test]
fn the_crate_root_holds_at_most_30_items() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).expect("the crate root is there");
    let items = root_items(&lib);
    assert!(
        items.len() <= 30,
        "{} items at the crate root (move the rarely named into a module): {items:?}",
        items.len()
    );
}
