//! The design map (`src/design.rs`) and the README point only at files that exist: a file
//! moved or deleted fails here until the prose that names it is brought up to date.

use std::path::Path;

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
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
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
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            // A deprecated alias keeps its old name for one release.
            let deprecated = lines[n.saturating_sub(3)..n]
                .iter()
                .any(|before| before.contains("#[deprecated"));
            for word in retired.iter().filter(|word| names(line, word)) {
                assert!(
                    deprecated || line.contains("deprecated"),
                    "{}:{} uses the retired word `{word}`",
                    file.display(),
                    n + 1
                );
            }
        }
    }
}
