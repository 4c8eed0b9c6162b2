//! `zkcheck explore` on the binary: `--port 0` lets the system choose a
//! free port, and the address printed is the one the Explorer serves on
//! (a user opens what is printed), never port 0.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the Explorer (it serves until interrupted) when the test ends,
/// whether it passed or not.
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn port_0_prints_the_port_actually_bound() {
    let child = Command::new(env!("CARGO_BIN_EXE_zkcheck"))
        .args(["explore", "lock", "--variant", "fixed", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("zkcheck runs");
    let mut serving = Serving(child);
    let stdout = serving.0.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("a first line");
    let address = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let port: u16 = address
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    assert_ne!(port, 0, "{line}");
    // The Explorer answers on the address printed (it binds after printing:
    // give it a few seconds).
    let deadline = Instant::now() + Duration::from_secs(20);
    let answer = loop {
        match TcpStream::connect(&address) {
            Ok(mut stream) => {
                stream
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .expect("a timeout");
                write!(stream, "GET / HTTP/1.0\r\nHost: {address}\r\n\r\n").expect("sent");
                let mut answer = String::new();
                let _ = stream.read_to_string(&mut answer);
                break answer;
            }
            Err(error) if Instant::now() > deadline => {
                panic!("nothing answers at {address} (printed {line:?}): {error}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    assert!(answer.starts_with("HTTP/1."), "{answer}");
}
