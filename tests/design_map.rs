//! The design map (`src/design.rs`) and the README point only at files that exist, no retired
//! word is used, and the code keeps the shape the map promises: no file over 500 lines, at most
//! 0.45 comment lines per code line outside tests, no circle of imports inside a folder, and
//! no doc comment says a line twice.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every word of `text` that reads as a path into the repository (`src/…`, `loom-tests/…`,
/// `tests/…`, `benches/…`), with the punctuation around it trimmed.
fn paths_named(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || "()[],;`:'\"".contains(c))
        .map(|word| word.trim_end_matches('.'))
        .filter(|word| {
            ["src/", "loom-tests/", "tests/", "benches/", ".ci/"]
                .iter()
                .any(|root| word.starts_with(root))
        })
        .collect()
}

fn check(file: &str) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(file)).expect("the file is there");
    let named = paths_named(&text);
    for path in &named {
        assert!(
            root.join(path).exists(),
            "{file} names {path}, which does not exist"
        );
    }
    named.len()
}

#[test]
fn the_design_map_names_only_files_that_exist() {
    assert!(check("src/design.rs") > 30, "the map names its files");
}

#[test]
fn the_readme_names_only_files_that_exist() {
    assert!(check("README.md") > 10, "the README names its files");
}

#[test]
fn a_path_is_read_out_of_its_punctuation() {
    assert_eq!(
        paths_named("see src/shard/lanes.rs; and (src/sync/). Also `tests/x.rs`, not srcs/y."),
        ["src/shard/lanes.rs", "src/sync/", "tests/x.rs"]
    );
}

/// The backticked words of the design map's glossary column "was called".
fn retired_words(map: &str) -> Vec<String> {
    map.lines()
        .filter_map(|line| line.strip_prefix("//! |"))
        .filter_map(|row| row.trim_end().strip_suffix('|')?.rsplit('|').next())
        .flat_map(|cell| cell.split('`').skip(1).step_by(2).map(str::to_owned))
        .collect()
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// Whether `line` names `word` as a whole word.
fn names(line: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(word).any(|(at, _)| {
        !line[..at].ends_with(is_word) && !line[at + word.len()..].starts_with(is_word)
    })
}

#[test]
fn no_retired_word_is_used_outside_the_glossary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("src/design.rs")).expect("the map is there");
    let retired = retired_words(&map);
    assert!(
        retired.len() >= 10,
        "the glossary lists retired words: {retired:?}"
    );
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("loom-tests"), &mut files);
    files.push(root.join("README.md"));
    for file in files.iter().filter(|file| !file.ends_with("src/design.rs")) {
        let text = std::fs::read_to_string(file).expect("a readable file");
        for (n, line) in text.lines().enumerate() {
            if let Some(word) = retired.iter().find(|word| names(line, word)) {
                panic!(
                    "{}:{} uses the retired word `{word}`",
                    file.display(),
                    n + 1
                );
            }
        }
    }
}

fn sources() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a readable file");
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
fn no_source_file_is_over_500_lines() {
    for (path, text) in sources() {
        let lines = text.lines().count();
        assert!(lines <= 500, "{} has {lines} lines", path.display());
    }
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

#[test]
fn the_files_of_a_folder_import_one_another_without_a_circle() {
    // Each folder's modules, and which of them each one names through `super::`.
    let mut folders: BTreeMap<PathBuf, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (path, text) in sources().iter().filter(|(path, _)| !is_test_file(path)) {
        let folder = path.parent().expect("a file in a folder").to_path_buf();
        let module = path
            .file_stem()
            .expect("a file name")
            .to_string_lossy()
            .into_owned();
        let mut names = BTreeSet::new();
        for line in outside_test_modules(text) {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for (at, _) in line.match_indices("super::") {
                let name: String = line[at + 7..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                names.insert(name);
            }
        }
        folders.entry(folder).or_default().insert(module, names);
    }
    // The one circle the design map names: an entry holds its callback, whose repeating run
    // is handed its entry.
    let allowed = ("entry", "callback", "node");
    for (folder, modules) in &folders {
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
            let circle = visit(module, &edges, &mut Vec::new(), &mut done);
            assert!(
                circle.is_none(),
                "{}: a circle of imports: {circle:?}",
                folder.display()
            );
        }
    }
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "src",
        "tests",
        "examples",
        "benches",
        "loom-tests",
        "driver",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
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
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a readable file");
        assert!(
            !text.contains("#[deprecated"),
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
