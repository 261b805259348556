//! The library's top-level modules form one order, lowest first, and a module names only modules below it
//! (ARCHITECTURE.md, "Module order"). This test reads `src/` and fails on any `crate::<module>` that names a
//! module at its own level or above: a cycle cannot come back unnoticed. It also fails on an environment variable
//! read below the top (`config` and the binary read them; everything else gets them as data).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Lowest first. Modules on one line are independent of each other.
const ORDER: &[&[&str]] = &[
    &["config", "atomic_file", "secrets", "private"],
    &["transcript"],
    &["settings"],
    &["index"],
    &["remote", "hub"],
    &["search"],
    &["model"],
    &["replay"],
    &["notes"],
    &["work"],
    &["service"],
    &["ui"],
    &["mcp"],
];

fn level(module: &str) -> Option<usize> {
    ORDER.iter().position(|l| l.contains(&module))
}

fn rust_files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        for e in std::fs::read_dir(p).unwrap().flatten() {
            rust_files(&e.path(), out);
        }
    } else if p.is_file() && p.extension().is_some_and(|x| x == "rs") {
        out.push(p.to_path_buf());
    }
}

/// The top-level modules a source text names through `crate::` paths (comments left out: they create no
/// dependency), including grouped imports such as `use crate::{index, search::Hit}`.
fn named_modules(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or("");
                for item in inner.split(',') {
                    let name: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        out.insert(name);
                    }
                }
            } else {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn every_module_names_only_modules_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let declared: Vec<String> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect();
    for m in &declared {
        assert!(
            level(m).is_some(),
            "src/lib.rs declares `{m}`, which has no place in the order: add it to ORDER and ARCHITECTURE.md"
        );
    }
    let mut wrong = Vec::new();
    for m in &declared {
        let mine = level(m).unwrap();
        let mut files = Vec::new();
        rust_files(&src.join(m), &mut files);
        rust_files(&src.join(format!("{m}.rs")), &mut files);
        assert!(!files.is_empty(), "no source for module {m}");
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for named in named_modules(&text) {
                if named == *m {
                    continue;
                }
                match level(&named) {
                    Some(l) if l < mine => {}
                    Some(_) => wrong.push(format!(
                        "{} (module {m}) names crate::{named}, which is not below it",
                        f.strip_prefix(&src).unwrap().display()
                    )),
                    None => {}
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_reader_of_paths_sees_grouped_imports_and_skips_comments() {
    let names = named_modules(
        "use crate::{index::Snapshot, search};\nlet x = crate::notes::f(); // crate::work\n/// [`crate::mcp`]\n",
    );
    let want: BTreeSet<String> = ["index", "search", "notes"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(names, want);
}

/// The places in a source text that read an environment variable (`env::var`, `env::var_os`, `env::vars`,
/// `non_empty_env(`), outside comments and outside `#[cfg(test)]` items (skipped by their braces): line numbers,
/// 1-based.
fn environment_reads(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    // Inside a test item: the brace depth once its first `{` is seen.
    let mut test_depth: Option<i64> = None;
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        if code.trim_start().starts_with("#[cfg(test)]") {
            test_depth = Some(0);
            continue;
        }
        if let Some(depth) = test_depth.as_mut() {
            let opened = code.contains('{');
            *depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
            if *depth <= 0 && (opened || code.contains('}') || code.trim_end().ends_with(';')) {
                test_depth = None;
            }
            continue;
        }
        if [
            "env::var(",
            "env::var_os(",
            "env::vars(",
            "env::vars_os(",
            "non_empty_env(",
        ]
        .iter()
        .any(|p| code.contains(p))
        {
            out.push(i + 1);
        }
    }
    out
}

/// The library (and the embedding's crate) takes the environment as data: only `config` (which reads it into
/// `config::Environment`) and the binary (`src/main.rs`, `src/cli/`, which reads it once at the start) read a variable.
#[test]
fn only_the_top_reads_the_environment() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut reads = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        if rel == Path::new("config.rs") || rel == Path::new("main.rs") || rel.starts_with("cli") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        reads.extend(
            environment_reads(&text)
                .into_iter()
                .map(|n| format!("{}:{n}", rel.display())),
        );
    }
    // The embedding's own crate (`ghola::embed`) is below `config`: it reads nothing either.
    let embed = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/embed/src");
    let mut files = Vec::new();
    rust_files(&embed, &mut files);
    assert!(!files.is_empty(), "no source under {}", embed.display());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        reads.extend(environment_reads(&text).into_iter().map(|n| {
            format!(
                "crates/embed/src/{}:{n}",
                f.strip_prefix(&embed).unwrap().display()
            )
        }));
    }
    assert!(
        reads.is_empty(),
        "the environment is read below the top (read it in config::Environment or the CLI and pass it \
         down): {}",
        reads.join(", ")
    );
}

#[test]
fn the_reader_of_environment_reads_skips_comments_and_tests() {
    let text = "let a = std::env::var(\"X\");\n// std::env::var(\"Y\")\nlet b = crate::config::non_empty_env(\"Z\");\n\
                #[cfg(test)]\nmod tests {\n    fn f() {\n        std::env::var_os(\"W\");\n    }\n}\n\
                fn after() { std::env::vars(); }\n#[cfg(test)]\nmod more;\nlet c = std::env::var(\"V\");\n";
    assert_eq!(environment_reads(text), vec![1, 3, 10, 13]);
}
