//! zkcheck's command line with the latch registered (the checking build,
//! `--cfg madsim`, which `.cargo/config.toml` sets).

#[cfg(madsim)]
fn main() -> std::process::ExitCode {
    zkcheck::main_with(async_latch::check::registry())
}

#[cfg(not(madsim))]
fn main() {
    eprintln!("the checking build needs `--cfg madsim` (.cargo/config.toml sets it)");
    std::process::exit(2);
}
