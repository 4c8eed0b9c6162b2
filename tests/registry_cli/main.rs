//! The command line with test-only recipes registered beside the built-in
//! ones: fixtures no shipped registry may hold, so this test binary is its
//! own `main` (`harness = false`) and starts itself as the command line.
//! Each module is one such command line and its checks: `lasso` (a livelock
//! and its lasso), `internal_error` (a panic inside a run). Started with a
//! module's `CHILD` variable set, the binary is that module's command line;
//! otherwise it runs every module's checks. One binary, not one per module:
//! each links the whole checker instantiated for its fixtures again (about
//! 40 s of the test build apiece).

#[path = "../../models/tests/common/churn.rs"]
mod churn;
mod internal_error;
mod lasso;
#[path = "../../models/tests/common/polling.rs"]
mod polling;

use std::process::ExitCode;

fn main() -> ExitCode {
    if std::env::var_os(lasso::CHILD).is_some() {
        return lasso::main();
    }
    if std::env::var_os(internal_error::CHILD).is_some() {
        return internal_error::main();
    }
    let statuses = [lasso::main(), internal_error::main()];
    match statuses.iter().all(|status| *status == ExitCode::SUCCESS) {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}
