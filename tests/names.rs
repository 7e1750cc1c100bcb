//! One word per thing: no type name is defined in two files of the library, and no word heads
//! two rows of the glossary.

mod support;
use support::files::{read, root, rust_files};

use std::collections::BTreeMap;

/// Each type name `text` defines (`struct`, `enum`, `union`, `trait`, or `type` outside an
/// `impl`: unindented or with a visibility), once each.
fn type_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for raw in text.lines() {
        let line = raw.trim_start();
        if line.starts_with("//") {
            continue;
        }
        let mut words = line.split_whitespace().peekable();
        let public = words.peek().is_some_and(|word| word.starts_with("pub"));
        if public {
            words.next();
        }
        let alias = public || raw.len() == line.len();
        let kinds = ["struct", "enum", "union", "trait"];
        if words
            .next()
            .is_some_and(|kind| kinds.contains(&kind) || (alias && kind == "type"))
        {
            if let Some(name) = words.next() {
                let name = name
                    .split(['<', '(', ';', ':', '{', '='])
                    .next()
                    .unwrap_or("");
                if name.starts_with(|c: char| c.is_ascii_uppercase())
                    && !names.contains(&name.to_owned())
                {
                    names.push(name.to_owned());
                }
            }
        }
    }
    names
}

#[test]
fn type_names_are_read_from_their_definitions() {
    let text = [
        "pub(crate) struct Owner<'a> {",
        "    struct Held {",
        "type Key = (u64, u64);",
        "pub(super) enum Look {",
        "// struct Commented;",
        "let kind = Kind::Struct;",
        "pub trait Callback: Send {",
        "    type Output = ();",
        "struct Owner;",
    ]
    .join("\n");
    assert_eq!(
        type_names(&text),
        ["Owner", "Held", "Key", "Look", "Callback"]
    );
}

#[test]
fn no_type_name_is_defined_in_two_files_of_the_library() {
    let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let src = root().join("src");
    for path in rust_files().iter().filter(|path| path.starts_with(&src)) {
        let shown = path
            .strip_prefix(root())
            .expect("under the root")
            .display()
            .to_string();
        for name in type_names(&read(path)) {
            files.entry(name).or_default().push(shown.clone());
        }
    }
    let twice: Vec<String> = files
        .into_iter()
        .filter(|(_, files)| files.len() > 1)
        .map(|(name, files)| format!("{name}: {}", files.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "type names defined in more than one file (one word per thing):\n{}",
        twice.join("\n")
    );
}

/// The words that head the glossary's rows (its first column), split at commas, with the row
/// of each.
fn headwords(glossary: &str) -> Vec<(String, usize)> {
    glossary
        .lines()
        .enumerate()
        .filter_map(|(at, line)| Some((at + 1, line.strip_prefix("//! | ")?)))
        .filter_map(|(at, row)| Some((at, row.split_once(" |")?.0)))
        .filter(|(_, cell)| !cell.starts_with("word") && !cell.starts_with("---"))
        .flat_map(|(at, cell)| {
            cell.split(',')
                .map(|word| word.trim().trim_matches('`').to_owned())
                .map(move |word| (word, at))
        })
        .collect()
}

#[test]
fn headwords_are_read_from_the_first_column() {
    let glossary = "//! | word | meaning | was called |\n//! |---|---|---|\n\
                    //! | send, take | moving | |\n//! | `Tick`, `Nanos` | units | |";
    let words: Vec<String> = headwords(glossary).into_iter().map(|(w, _)| w).collect();
    assert_eq!(words, ["send", "take", "Tick", "Nanos"]);
}

#[test]
fn no_word_heads_two_rows_of_the_glossary() {
    let glossary = read(&root().join("src/design/glossary.rs"));
    let mut rows: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (word, at) in headwords(&glossary) {
        rows.entry(word).or_default().push(at);
    }
    let twice: Vec<String> = rows
        .into_iter()
        .filter(|(_, rows)| rows.len() > 1)
        .map(|(word, rows)| format!("{word}: lines {rows:?}"))
        .collect();
    assert!(
        twice.is_empty(),
        "words with two meanings in the glossary:\n{}",
        twice.join("\n")
    );
}
