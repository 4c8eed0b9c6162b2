//! zkcheck's command line with `simple_lock` registered.

fn main() -> std::process::ExitCode {
    zkcheck::main_with(custom_recipe::registry())
}
