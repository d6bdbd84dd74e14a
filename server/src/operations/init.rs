//! The server as a container's pid 1. The kernel gives pid 1 every orphan of the namespace to
//! reap, and Chromium leaves many (its zygote, renderers and crash handlers outlive a browser
//! that crashed or was killed): without a reaper they stay zombies until the container stops
//! (measured: 11 after one killed browser). So when the server finds itself pid 1, it splits in
//! two before anything else starts: pid 1 stays a small init that reaps every child and passes
//! signals on, and its child runs the server. Images need no `--init` or tini for this.

/// The signals pid 1 passes on to the server (`docker stop` sends SIGTERM to pid 1).
const FORWARDED: &[libc::c_int] = &[
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// Call first in `main`, before any thread exists. Returns in the process that runs the server;
/// as pid 1 it never returns (it exits with the server's status).
pub fn reap_if_pid_1() {
    // SAFETY: getpid has no preconditions.
    if unsafe { libc::getpid() } != 1 {
        return;
    }
    // SAFETY: the process is single-threaded here (no runtime, no logger yet), so fork is safe;
    // signal masks are process-local plain data.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        for &signal in FORWARDED {
            libc::sigaddset(&mut set, signal);
        }
        // Blocked before the fork so nothing arrives unhandled in between. For pid 1 a signal
        // with the default action is dropped at once, but a blocked one is kept for sigwait.
        let mut previous: libc::sigset_t = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_BLOCK, &set, &mut previous);
        let server = libc::fork();
        if server < 0 {
            // No init then; the server still runs, as pid 1.
            libc::sigprocmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
            eprintln!("browserenv-server: cannot fork a reaper as pid 1; zombies may accumulate");
            return;
        }
        if server == 0 {
            libc::sigprocmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
            return;
        }
        std::process::exit(supervise(server, &set));
    }
}

/// Pid 1's loop: pass signals to the server, reap every child, end with the server's status.
///
/// SAFETY: `set` holds the blocked signals; called only in the single-threaded parent.
unsafe fn supervise(server: libc::pid_t, set: &libc::sigset_t) -> i32 {
    loop {
        let mut signal: libc::c_int = 0;
        if unsafe { libc::sigwait(set, &mut signal) } != 0 {
            continue;
        }
        if signal != libc::SIGCHLD {
            unsafe { libc::kill(server, signal) };
            continue;
        }
        loop {
            let mut status = 0;
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            if pid == server {
                // The rest of the namespace is killed by the kernel when pid 1 exits.
                return if libc::WIFEXITED(status) {
                    libc::WEXITSTATUS(status)
                } else {
                    128 + libc::WTERMSIG(status)
                };
            }
        }
    }
}
