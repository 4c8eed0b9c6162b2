//! `zkcheck explore RECIPE --variant V --clients N --faults ... [--port P]`:
//! serves stateright's Explorer for a recipe model on 127.0.0.1, to step
//! through the model by hand (each step shows what happened and the state).
//!
//! `--port 0` lets the system choose a free port; the address printed is the
//! one bound. Exit status: 2 on bad input or when the port cannot be bound;
//! otherwise it serves until interrupted.

use super::check_args::ModelArgs;
use super::Harness;
use std::net::TcpListener;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ExploreArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The port on 127.0.0.1.
    #[arg(long, default_value_t = 3000)]
    pub port: u16,
}

pub fn run(harness: &Harness, args: ExploreArgs) -> ExitCode {
    let (model, setup) = match args.model.resolve(harness) {
        Ok(resolved) => resolved,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let asked = format!("127.0.0.1:{}", args.port);
    // Fail with a clear message instead of the Explorer's panic on a taken
    // port; with `--port 0` the system picks a free port, and the address
    // printed (and served) is the one bound, never port 0.
    let address = match TcpListener::bind(&asked).and_then(|probe| probe.local_addr()) {
        Ok(bound) => bound.to_string(),
        Err(error) => {
            eprintln!("error: --port: cannot listen on {asked}: {error}");
            return ExitCode::from(2);
        }
    };
    println!(
        "Explorer for {}/{} at http://{address}/ (Ctrl-C to stop)",
        args.model.recipe,
        args.model.variant()
    );
    // The probe is closed by now: the Explorer binds the same port again
    // (another process could take it in between; the Explorer then fails
    // and the command exits 2 below).
    let _ = std::io::Write::flush(&mut std::io::stdout());
    model.explore(&setup, &address);
    eprintln!("zkcheck explore: the Explorer stopped");
    ExitCode::from(2)
}
