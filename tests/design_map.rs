//! The design map (`src/design.rs`) and the README point only at files that exist, no retired
//! word is used, and the code keeps the shape the map promises: no file over 500 lines, at most
//! 0.45 comment lines per code line in the library outside tests, no circle of imports inside a
//! folder. The words and the shape are checked in the library, its loom models, the driver,
//! the benches, the examples, the integration tests and the Markdown pages alike.

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

/// The folders whose files the word and shape checks read.
const FOLDERS: [&str; 6] = [
    "src",
    "loom-tests",
    "driver",
    "benches",
    "examples",
    "tests",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The files under `dir` whose name ends in `.{ext}`, recursively, or only those directly in
/// it; build output and hidden folders are left out.
fn files_under(dir: &Path, ext: &str, recurse: bool, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable folder") {
        let path = entry.expect("a folder entry").path();
        let name = path.file_name().expect("a name").to_string_lossy();
        if path.is_dir() {
            if recurse && name != "target" && !name.starts_with('.') {
                files_under(&path, ext, true, out);
            }
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// Every Rust file of the folders checked, in order.
fn rust_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for folder in FOLDERS {
        files_under(&root().join(folder), "rs", true, &mut files);
    }
    files.sort();
    files
}

/// Every file the word checks read: the Rust files, and the Markdown pages at the top and in
/// the folders checked.
fn text_files() -> Vec<PathBuf> {
    let mut files = rust_files();
    files_under(root(), "md", false, &mut files);
    for folder in FOLDERS {
        files_under(&root().join(folder), "md", true, &mut files);
    }
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("a readable file")
}

/// The lines of `text` the word checks hold to, numbered from 0: all of them but a changelog's
/// released versions (`## [0.2.0]` on), which tell the past in the words it was told in.
fn current_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, line)| !line.starts_with("## [") || line.starts_with("## [Unreleased]"))
        .collect()
}

/// The backticked words of the design map's glossary column "was called".
fn retired_words(map: &str) -> Vec<String> {
    map.lines()
        .filter_map(|line| line.strip_prefix("//! |"))
        .filter_map(|row| row.trim_end().strip_suffix('|')?.rsplit('|').next())
        .flat_map(|cell| cell.split('`').skip(1).step_by(2).map(str::to_owned))
        .collect()
}

/// The words the glossary rules out in prose as well: each `(never "word")` of its rows.
fn never_words(map: &str) -> Vec<String> {
    map.lines()
        .filter(|line| line.starts_with("//! |"))
        .flat_map(|row| row.split("(never \"").skip(1))
        .filter_map(|rest| Some(rest.split_once('"')?.0.to_owned()))
        .collect()
}

/// The places `line` names `word` as a whole word.
fn places(line: &str, word: &str) -> Vec<usize> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(word)
        .filter(|&(at, _)| {
            !line[..at].ends_with(is_word) && !line[at + word.len()..].starts_with(is_word)
        })
        .map(|(at, _)| at)
        .collect()
}

/// Whether `line` names `word` as a whole word.
fn names(line: &str, word: &str) -> bool {
    !places(line, word).is_empty()
}

/// Whether the word at `at` in `line` is code: between backticks, or a part of a path.
fn in_code(line: &str, at: usize, len: usize) -> bool {
    let before = &line[..at];
    before.matches('`').count() % 2 == 1
        || before.ends_with([':', '.'])
        || line[at + len..].starts_with("::")
}

#[test]
fn no_retired_word_is_used_outside_the_glossary() {
    let map = read(&root().join("src/design.rs"));
    let retired = retired_words(&map);
    assert!(
        retired.len() >= 10,
        "the glossary lists retired words: {retired:?}"
    );
    let mut found = Vec::new();
    for file in text_files()
        .iter()
        .filter(|f| !f.ends_with("src/design.rs"))
    {
        let text = read(file);
        let lines = current_lines(&text);
        for &(n, line) in &lines {
            // A deprecated alias keeps its old name for one release.
            let deprecated = lines[n.saturating_sub(3)..n]
                .iter()
                .any(|(_, before)| before.contains("#[deprecated"));
            for word in retired.iter().filter(|word| names(line, word)) {
                if !deprecated && !line.contains("deprecated") {
                    found.push(format!("{}:{} `{word}`", file.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "retired words in use:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_word_the_glossary_rules_out_is_written_in_prose() {
    let never = never_words(&read(&root().join("src/design.rs")));
    assert!(!never.is_empty(), "the glossary rules out words: {never:?}");
    let mut found = Vec::new();
    // The library's sources join once their own uses are renamed; until then src/ is left out.
    let outside_the_library = |file: &&PathBuf| !file.starts_with(root().join("src"));
    for file in text_files().iter().filter(outside_the_library) {
        let text = read(file);
        for (n, line) in current_lines(&text) {
            let lower = line.to_lowercase();
            for word in &never {
                for form in [word.clone(), format!("{word}s")] {
                    for at in places(&lower, &form) {
                        if !in_code(&lower, at, form.len()) {
                            found.push(format!("{}:{} {:?}", file.display(), n + 1, line.trim()));
                        }
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "ruled-out words:\n{}", found.join("\n"));
}

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
