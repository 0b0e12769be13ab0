//! The `asg` binary: parses the arguments and runs the command; an error
//! is one line on stderr and exit status 1.

use clap::Parser;

fn main() -> std::process::ExitCode {
    // Rust ignores SIGPIPE, so a closed pipe (`asg approvals list | head
    // -1`) would make `println!` panic; with the default action asg ends
    // quietly, like other Unix tools.
    // SAFETY: first thing in `main`, before any thread exists; SIG_DFL is
    // a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = asg_cli::args::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("asg: cannot start: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(asg_cli::app::run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("asg: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
