//! zkcheck's command line with this crate's recipes registered (built as
//! `.cargo/config.toml` says, `--cfg madsim`: the simulator).

fn main() -> std::process::ExitCode {
    zkcheck::main_with(outside_async::check::registry())
}
