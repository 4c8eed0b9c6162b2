//! Output into a pipe whose reader has gone (`zkcheck recipes | head -1`)
//! ends the process the way other command-line tools end, by SIGPIPE,
//! without a panic message on stderr.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    // The reading end is closed before the child starts: however the two
    // processes are scheduled, its first write finds no reader.
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let child = Command::new(env!("CARGO_BIN_EXE_zkcheck"))
        .arg("recipes")
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .expect("zkcheck starts");
    let output = child.wait_with_output().expect("zkcheck ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    assert_eq!(
        output.status.signal(),
        Some(libc::SIGPIPE),
        "status {:?}, stderr: {stderr}",
        output.status
    );
}
