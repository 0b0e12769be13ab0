//! The `asg` binary: parses the arguments and runs the command; an error
//! is one line on stderr and exit status 1.

use clap::Parser;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let cli = asg_cli::args::Cli::parse();
    match asg_cli::app::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("asg: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
