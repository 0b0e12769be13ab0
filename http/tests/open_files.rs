//! The soft limit of open files raised to the hard one, as every server
//! binary does at start. Its own test binary: it changes the process's
//! limits.
#![cfg(unix)]

use asg_http::process::raise_open_files_limit;
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

#[test]
fn a_low_soft_limit_is_raised_to_the_hard_one_and_the_hard_one_is_kept() {
    let start = getrlimit(Resource::Nofile);
    let Some(hard) = start.maximum.filter(|hard| *hard > 64) else {
        eprintln!(
            "hard limit {:?}: nothing to raise the soft one to",
            start.maximum
        );
        return;
    };
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(64),
            maximum: start.maximum,
        },
    )
    .unwrap();

    let limit = raise_open_files_limit();

    assert_eq!(limit.before, Some(64));
    assert_eq!(limit.now, Some(hard));
    let now = getrlimit(Resource::Nofile);
    assert_eq!(now.current, Some(hard), "the soft limit is the hard one");
    assert_eq!(now.maximum, start.maximum, "the hard limit is unchanged");

    let again = raise_open_files_limit();
    assert_eq!((again.before, again.now), (Some(hard), Some(hard)));
}
