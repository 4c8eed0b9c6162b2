//! zkcheck's command line with this crate's recipes registered.

fn main() -> std::process::ExitCode {
    zkcheck::main_with(outside_sansio::registry())
}
