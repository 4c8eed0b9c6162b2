//! zkcheck's command line with the latch registered. Built as
//! `.cargo/config.toml` says (`--cfg madsim`), it simulates: every command
//! runs the latch against the simulated ZooKeeper. Built without it
//! (`RUSTFLAGS=""`), the latch's `zookeeper-client` and tokio are the real
//! crates and `live` runs it against a real ZooKeeper.

fn main() -> std::process::ExitCode {
    zkcheck::main_with(async_latch::check::registry())
}
