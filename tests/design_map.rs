//! The design map (`src/design.rs`) and the README point only at files that exist, and no
//! word the glossary (`src/design/glossary.rs`) retired is used: in the library, its loom models, the driver, the benches, the
//! examples, the integration tests and the Markdown pages alike. The code's shape is checked
//! in `code_shape.rs`.

mod support;
use support::files::{read, root, text_files};

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
    assert!(check("README.md") > 0, "the README names its files");
}

#[test]
fn a_path_is_read_out_of_its_punctuation() {
    assert_eq!(
        paths_named("see src/shard/lanes.rs; and (src/sync/). Also `tests/x.rs`, not srcs/y."),
        ["src/shard/lanes.rs", "src/sync/", "tests/x.rs"]
    );
}

/// The lines of `text` the word checks hold to, numbered from 0: all of them but a changelog's
/// released versions (`## [0.2.0]` on), which tell the past in the words it was told in.
fn current_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, line)| !line.starts_with("## [") || line.starts_with("## [Unreleased]"))
        .collect()
}

/// The backticked words of the glossary's column "was called".
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

/// The identifiers of `line` (runs of letters, digits and `_`) that hold the one-part `word`
/// as one of their `_`-separated parts: `OLD_BIT` and `NEW_OLD` for `OLD`. A word of several
/// parts is left to `names`: inside a longer name it reads as a phrase (a test's name).
fn holders<'a>(line: &'a str, word: &str) -> Vec<&'a str> {
    if word.contains('_') {
        return Vec::new();
    }
    line.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|ident| ident.contains('_') && ident.split('_').any(|part| part == word))
        .collect()
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
    let map = read(&root().join("src/design/glossary.rs"));
    let retired = retired_words(&map);
    assert!(
        retired.len() >= 10,
        "the glossary lists retired words: {retired:?}"
    );
    let mut found = Vec::new();
    for file in text_files()
        .iter()
        .filter(|f| !f.ends_with("src/design/glossary.rs"))
    {
        let text = read(file);
        let lines = current_lines(&text);
        for &(n, line) in &lines {
            for word in retired.iter().filter(|word| names(line, word)) {
                found.push(format!("{}:{} `{word}`", file.display(), n + 1));
            }
            for word in &retired {
                for ident in holders(line, word) {
                    found.push(format!(
                        "{}:{} `{word}` in `{ident}`",
                        file.display(),
                        n + 1
                    ));
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
fn a_word_is_found_as_a_part_of_an_identifier() {
    let line = "see `OLD_BIT`, NEW_OLD, `OLDER_X`, old_bit, OLD and `is_old_way_now`";
    assert_eq!(holders(line, "OLD"), ["OLD_BIT", "NEW_OLD"]);
    assert!(holders(line, "old_way").is_empty());
}

#[test]
fn no_word_the_glossary_rules_out_is_written_in_prose() {
    let never = never_words(&read(&root().join("src/design/glossary.rs")));
    assert!(!never.is_empty(), "the glossary rules out words: {never:?}");
    let mut found = Vec::new();
    // The glossary, which names the words it rules out, is the one place they stand.
    for file in text_files()
        .iter()
        .filter(|f| !f.ends_with("src/design/glossary.rs"))
    {
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
