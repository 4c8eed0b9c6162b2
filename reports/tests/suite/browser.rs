//! Each fixture's HTML page opened in a real browser: Debian's chromium,
//! headless.
//!
//! For every page the test takes a screenshot (1400×2000) and checks it is
//! a PNG of that size and not blank (larger than the screenshot of an
//! empty page taken the same way: a blank page compresses to a small
//! file); it reads the browser's log for console messages (there must be
//! none: the page has no script and loads nothing), and dumps the DOM to
//! check the SVG pictures are in it. A probe page with a script shows the
//! log really carries console messages, so their absence means something.
//!
//! The browser is `$CHROMIUM`, or `chromium` on the PATH (`apt-get install
//! chromium`). Without one the test fails when `CI` is set (CI must run
//! it) and otherwise prints why it skipped and passes. With
//! `KEEP_SCREENSHOTS=1` the pages and screenshots stay in the temporary
//! directory the test prints, to look at.

use crate::common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WIDTH: u32 = 1400;
const HEIGHT: u32 = 2000;
const TIMEOUT: Duration = Duration::from_secs(120);

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMIUM").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "CHROMIUM={} is not a file", path.display());
        return Some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("chromium"))
        .find(|candidate| candidate.is_file())
}

struct Output {
    stdout: String,
    stderr: String,
}

/// Runs the browser on `page` with `args`, killing it after [`TIMEOUT`].
fn run(chromium: &Path, dir: &Path, label: &str, page: &Path, args: &[String]) -> Output {
    let profile = dir.join(format!("profile-{label}"));
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={WIDTH},{HEIGHT}"))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium.display()));
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stdout.read_to_end(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{label}: chromium did not finish within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = Output {
        stdout: String::from_utf8_lossy(&out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
    };
    assert!(
        status.success(),
        "{label}: chromium exited with {status}\n{}",
        output.stderr
    );
    output
}

/// The console messages in a browser log (`...:INFO:CONSOLE:1] "..."`)
/// and uncaught errors.
fn console_lines(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|line| line.contains(":CONSOLE") || line.contains("Uncaught"))
        .collect()
}

/// Takes a screenshot of `page`; returns the PNG's size in bytes after
/// checking it is a PNG of the window's size, and the console was quiet.
fn screenshot(chromium: &Path, dir: &Path, label: &str, page: &Path) -> (u64, Vec<String>) {
    let png = dir.join(format!("{label}.png"));
    let output = run(
        chromium,
        dir,
        label,
        page,
        &[format!("--screenshot={}", png.display())],
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|e| {
        panic!(
            "{label}: no screenshot {}: {e}\n{}",
            png.display(),
            output.stderr
        )
    });
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n") && &bytes[12..16] == b"IHDR",
        "{label}: not a PNG"
    );
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((width, height), (WIDTH, HEIGHT), "{label}: screenshot size");
    let console = console_lines(&output.stderr)
        .into_iter()
        .map(str::to_string)
        .collect();
    (bytes.len() as u64, console)
}

fn write(dir: &Path, name: &str, html: &str) -> PathBuf {
    let path = dir.join(format!("{name}.html"));
    std::fs::write(&path, html).unwrap();
    path
}

#[test]
fn pages_render_in_chromium() {
    let Some(chromium) = find_chromium() else {
        let message = "no chromium: set CHROMIUM or put chromium on the PATH \
                       (Debian: apt-get install -y chromium)";
        if in_ci() {
            panic!("{message}; CI is set, so the browser test must run");
        }
        // Straight to stderr: the test harness captures eprintln! of a
        // passing test, and a skip must be seen.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED pages_render_in_chromium: {message} (set CI=true to make this a failure)"
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("zk-reports-browser-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    eprintln!(
        "browser: {}; pages and screenshots in {}",
        chromium.display(),
        dir.display()
    );

    // The log carries console messages: a page with a script shows them.
    let probe = write(
        &dir,
        "probe",
        "<!DOCTYPE html><html><body><p>probe</p>\
         <script>console.error(\"zkcheck-probe\"); notDefined();</script></body></html>",
    );
    let (_, console) = screenshot(&chromium, &dir, "probe", &probe);
    assert!(
        console.iter().any(|l| l.contains("zkcheck-probe"))
            && console.iter().any(|l| l.contains("Uncaught")),
        "the browser log shows no console messages, so it cannot show a page's errors: {console:?}"
    );

    let blank = write(
        &dir,
        "blank",
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>blank</title></head><body></body></html>",
    );
    let (blank_size, console) = screenshot(&chromium, &dir, "blank", &blank);
    assert!(console.is_empty(), "blank: {console:?}");

    let mut pages = common::all();
    pages.push(("hostile", common::hostile_report()));
    pages.push(("long", common::long_report()));
    for (name, report) in &pages {
        let page = write(&dir, name, &zk_reports::html(report));
        let (size, console) = screenshot(&chromium, &dir, name, &page);
        assert!(console.is_empty(), "{name}: console messages: {console:#?}");
        assert!(
            size > blank_size * 3,
            "{name}: the screenshot ({size} bytes) looks blank (an empty page's: {blank_size} bytes)"
        );
        eprintln!("{name}: screenshot {size} bytes (blank page: {blank_size})");

        // The DOM as the browser built it.
        let dom = run(
            &chromium,
            &dir,
            &format!("{name}-dom"),
            &page,
            &["--dump-dom".to_string()],
        )
        .stdout;
        assert!(
            dom.contains("<h1 id=\"title\">"),
            "{name}: no title in the DOM"
        );
        assert!(
            !dom.to_lowercase().contains("<script"),
            "{name}: a script in the DOM"
        );
        for run_index in 1..=report.runs.len() {
            for picture in ["timeline", "sequence"] {
                let svg = format!("<svg id=\"{picture}-{run_index}\" class=\"{picture}\"");
                let expected = match picture {
                    "timeline" => !report.runs[run_index - 1].holds.is_empty(),
                    _ => !report.runs[run_index - 1].trace.is_empty(),
                };
                assert_eq!(dom.contains(&svg), expected, "{name}: {svg}");
            }
        }
        let has_buckets = report.sweep.as_ref().is_some_and(|s| !s.buckets.is_empty());
        assert_eq!(
            dom.contains("<svg id=\"sweep-bars\" class=\"bars\""),
            has_buckets,
            "{name}: the bar chart"
        );
        let curves = report.coverage.as_ref().map_or(0, |c| c.curves.len());
        assert_eq!(
            dom.matches("<polyline class=\"curve\"").count(),
            curves,
            "{name}: the coverage chart"
        );
        if *name == "lock_run" {
            assert!(dom.contains("<rect class=\"overlap\""));
            assert!(dom.contains("<rect class=\"hold stale\""));
        }
        if *name == "hostile" {
            assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        }
    }
    if std::env::var_os("KEEP_SCREENSHOTS").is_some() {
        eprintln!("kept the pages and screenshots in {}", dir.display());
    } else {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
