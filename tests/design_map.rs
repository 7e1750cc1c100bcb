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
