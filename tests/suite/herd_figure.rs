//! `zkcheck herd`, the herd-effect figure (docs/herd-effect.md): the herd
//! election's notifications per release grow with the clients while a
//! predecessor watch stays at one, the figures come from scenarios that do
//! not check `herd` (the herd oracle measures every run), the output is
//! byte-identical from one run to the next, and bad flags exit 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn zkcheck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zkcheck"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("RUST_LOG")
        .output()
        .expect("zkcheck runs")
}

/// A file in the system's temp directory, unique to this process and test.
fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("zkcheck-herd-{}-{name}", std::process::id()))
}

/// Runs the figure for 2 and 10 clients, seeds 0..2: (stdout, SVG, JSON).
fn figure(tag: &str) -> (String, String, serde_json::Value, String) {
    let (svg, json) = (temp(&format!("{tag}.svg")), temp(&format!("{tag}.json")));
    let output = zkcheck(&[
        "herd",
        "--clients",
        "10,2",
        "--seeds",
        "2",
        "--svg",
        svg.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    let read = |path: &Path| {
        let text = std::fs::read_to_string(path).expect("written");
        let _ = std::fs::remove_file(path);
        text
    };
    let (svg_text, json_text) = (read(&svg), read(&json));
    let value = serde_json::from_str(&json_text).expect("JSON");
    (
        String::from_utf8(output.stdout).expect("UTF-8"),
        svg_text,
        value,
        json_text,
    )
}

/// (clients, notifications per release, reads per acquisition) of a series.
fn series(figure: &serde_json::Value, recipe: &str, variant: &str) -> Vec<(u64, f64, f64)> {
    let series = figure["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["recipe"] == recipe && s["variant"] == variant)
        .unwrap_or_else(|| panic!("no series {recipe} {variant}"));
    series["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            assert_eq!(p["runs"], 2);
            (
                p["clients"].as_u64().unwrap(),
                p["notifications_per_release"].as_f64().unwrap(),
                p["reads_per_acquisition"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn herd_election_grows_with_clients_predecessor_watch_stays_at_one_deterministically() {
    let (table, svg, json, json_text) = figure("a");
    // The herd: every contender watches the children list, so one release
    // wakes about every other contender (8.90 per release measured with 10
    // clients, seeds 0..2).
    let herd = series(&json, "election", "original");
    assert_eq!(herd.iter().map(|p| p.0).collect::<Vec<_>>(), [2, 10]);
    assert!(herd[1].1 >= 8.0, "{herd:?}");
    assert!(herd[1].1 > 3.0 * herd[0].1, "{herd:?}");
    assert!(herd[1].2 >= 8.0, "{herd:?}");
    // The predecessor watch: at most one wakeup per release, whatever the
    // number of clients, and a few reads per acquisition.
    for (recipe, variant) in [("election", "fixed"), ("lock", "fixed")] {
        for (clients, notifications, reads) in series(&json, recipe, variant) {
            assert!(
                notifications <= 1.5,
                "{recipe} {variant}, {clients} clients: {notifications}"
            );
            assert!(
                reads <= 5.0,
                "{recipe} {variant}, {clients} clients: {reads}"
            );
        }
    }
    assert!(table.starts_with("| variant |"), "{table}");
    assert!(table.contains("| election original |"), "{table}");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(
        !svg.contains("href"),
        "self-contained: no external resources"
    );
    // Same flags, byte-identical output.
    let (table_again, svg_again, _, json_again) = figure("b");
    assert_eq!(table, table_again);
    assert_eq!(svg, svg_again);
    assert_eq!(json_text, json_again);
}

#[test]
fn bad_flags_exit_2_with_the_flag_named() {
    for (args, expected) in [
        (
            &["--clients", "1"][..],
            "--clients: 1 clients is outside 2..=256",
        ),
        (
            &["--clients", "257"],
            "--clients: 257 clients is outside 2..=256",
        ),
        (&["--clients", ""], "found an empty entry"),
        (&["--clients", "2,,5"], "found an empty entry"),
        (&["--clients", "2,x"], "`x` is not a client count"),
        (&["--clients", "5,5"], "5 clients is given twice"),
        (&["--seeds", "0"], "--seeds: 0 is outside 1..=1000"),
        (&["--jobs", "0"], "--jobs: 0 is outside 1..=256"),
    ] {
        let output = zkcheck(&[&["herd"][..], args].concat());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}
