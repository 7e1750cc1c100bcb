//! The repository's files, as the design-map and code-shape tests read them.

use std::path::{Path, PathBuf};

/// The folders whose files the word and shape checks read.
pub const FOLDERS: [&str; 6] = [
    "src",
    "loom-tests",
    "driver",
    "benches",
    "examples",
    "tests",
];

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The files under `dir` whose name ends in `.{ext}`, recursively, or only those directly in
/// it; build output and hidden folders are left out.
pub fn files_under(dir: &Path, ext: &str, recurse: bool, out: &mut Vec<PathBuf>) {
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
pub fn rust_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for folder in FOLDERS {
        files_under(&root().join(folder), "rs", true, &mut files);
    }
    files.sort();
    files
}

/// Every file the word checks read: the Rust files, and the Markdown pages at the top and in
/// the folders checked.
pub fn text_files() -> Vec<PathBuf> {
    let mut files = rust_files();
    files_under(root(), "md", false, &mut files);
    for folder in FOLDERS {
        files_under(&root().join(folder), "md", true, &mut files);
    }
    files
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("a readable file")
}
