//! What the root crate's binary tests share: running `zkcheck` and
//! reading what it did, and a scratch directory per test. A test file
//! takes it with `mod common;` and uses what it needs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// What a finished `zkcheck` did.
pub struct Run {
    /// The exit status (-1 when a signal ended it).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Exit `code`, and no panic on stderr.
    pub fn expect(&self, code: i32) -> &Run {
        assert_eq!(
            self.code, code,
            "exit {} instead of {code}\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        );
        assert!(
            !self.stderr.contains("panicked"),
            "a panic: {}",
            self.stderr
        );
        self
    }

    /// Exit 2 with every `needle` on stderr.
    pub fn refused(&self, needles: &[&str]) -> &Run {
        self.expect(2);
        for needle in needles {
            assert!(
                self.stderr.contains(needle),
                "stderr lacks {needle:?}:\n{}",
                self.stderr
            );
        }
        self
    }
}

/// Runs zkcheck in `dir` (the crate's root when `None`), `RUST_LOG` unset.
pub fn zkcheck_in(dir: Option<&Path>, args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_zkcheck"))
        .args(args)
        .current_dir(dir.unwrap_or(Path::new(env!("CARGO_MANIFEST_DIR"))))
        .env_remove("RUST_LOG")
        .output()
        .expect("zkcheck runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs zkcheck in the crate's root.
pub fn zkcheck(args: &[&str]) -> Run {
    zkcheck_in(None, args)
}

/// A fresh, empty directory for one test of a suite (`suite`: the test
/// file's name), under cargo's temporary directory for tests.
pub fn scratch(suite: &str, test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{suite}-{}", std::process::id()))
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// The real server, to this test alone: the tests that use one compare its
/// node count before and after (live_cli, live_async), so they run one at
/// a time, whichever module they are in.
pub fn real_server_to_myself() -> std::sync::MutexGuard<'static, ()> {
    static SERVER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERVER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The built-in recipes, as a scenario file names them.
pub fn builtin() -> &'static zk_sim::scenario::SimRecipes {
    static REGISTRY: std::sync::OnceLock<zk_models::Registry> = std::sync::OnceLock::new();
    REGISTRY
        .get_or_init(zk_models::Registry::builtin)
        .sim_recipes()
}

/// Every shipped scenario file (`scenarios/`, `scenarios/bugs/` and
/// `scenarios/ensemble/`), sorted.
pub fn shipped_scenarios() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files = Vec::new();
    for dir in [root.clone(), root.join("bugs"), root.join("ensemble")] {
        for entry in std::fs::read_dir(dir).expect("scenarios/") {
            let path = entry.expect("an entry").path();
            if path.extension().is_some_and(|e| e == "toml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}
