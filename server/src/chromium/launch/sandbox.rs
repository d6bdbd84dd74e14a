//! Whether the Chromium we launch runs in its own sandbox. Pages are untrusted: the sandbox is
//! what keeps a renderer exploit inside the renderer. It is on wherever it can work, which on
//! Linux means not running as root (Chromium refuses its sandbox to root) and being allowed to
//! create user namespaces (Docker's default seccomp profile, for one, forbids them). Where it
//! cannot work, Chromium gets `--no-sandbox` and the start says why and what to change.

use std::sync::OnceLock;

/// `BROWSER_SANDBOX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SandboxSetting {
    /// On where it can work, else off with a warning saying why.
    #[default]
    Auto,
    /// On, or the server does not start.
    On,
    /// Off (`--no-sandbox`), e.g. inside a container that is the isolation boundary itself.
    Off,
}

/// The decision and its reason, for the start-up log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub enabled: bool,
    pub reason: String,
}

/// Decide from the setting and what this process may do (pure: tested on every case).
pub fn decide(
    setting: SandboxSetting,
    root: bool,
    user_namespaces: bool,
) -> Result<Sandbox, String> {
    let why_not = if root {
        Some("the server runs as root, and Chromium's sandbox does not run as root (run the server as another user)")
    } else if !user_namespaces {
        Some("this process may not create user namespaces (in Docker: --security-opt seccomp=unconfined, or a seccomp profile that allows unshare(CLONE_NEWUSER); a Docker Swarm service, which takes no seccomp option: --cap-add CAP_SYS_ADMIN; elsewhere: sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0)")
    } else {
        None
    };
    match (setting, why_not) {
        (SandboxSetting::Off, _) => Ok(Sandbox {
            enabled: false,
            reason: "BROWSER_SANDBOX=off".into(),
        }),
        (_, None) => Ok(Sandbox {
            enabled: true,
            reason: "not root, and user namespaces are available".into(),
        }),
        (SandboxSetting::On, Some(why)) => Err(format!(
            "BROWSER_SANDBOX=on, but Chromium's sandbox cannot work here: {why}"
        )),
        (SandboxSetting::Auto, Some(why)) => Ok(Sandbox {
            enabled: false,
            reason: format!(
                "{why}; set BROWSER_SANDBOX=off to accept this without a warning, or =on to refuse to start without it"
            ),
        }),
    }
}

/// The decision for this process under `setting`.
pub fn for_this_process(setting: SandboxSetting) -> Result<Sandbox, String> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    decide(setting, root, user_namespaces())
}

/// The `auto` decision, once per process (what `ChromiumConfig::default()` uses).
pub fn auto() -> bool {
    static AUTO: OnceLock<bool> = OnceLock::new();
    *AUTO.get_or_init(|| {
        for_this_process(SandboxSetting::Auto)
            .map(|s| s.enabled)
            .unwrap_or(false)
    })
}

/// Whether a child of this process may create a user namespace (what Chromium's namespace
/// sandbox needs): a forked child tries and reports through its exit status.
fn user_namespaces() -> bool {
    // SAFETY: the child only makes raw system calls (unshare, _exit) before it exits, which is
    // what is allowed after fork in a multi-threaded process.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            let code = if libc::unshare(libc::CLONE_NEWUSER) == 0 {
                0
            } else {
                1
            };
            libc::_exit(code);
        }
        if pid < 0 {
            return false;
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0) == pid
            && libc::WIFEXITED(status)
            && libc::WEXITSTATUS(status) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_wherever_it_can_work_and_said_why_when_not() {
        let on = decide(SandboxSetting::Auto, false, true).unwrap();
        assert!(on.enabled);
        let root = decide(SandboxSetting::Auto, true, true).unwrap();
        assert!(!root.enabled);
        assert!(root.reason.contains("root") && root.reason.contains("BROWSER_SANDBOX=off"));
        let no_namespaces = decide(SandboxSetting::Auto, false, false).unwrap();
        assert!(!no_namespaces.enabled);
        assert!(
            no_namespaces.reason.contains("seccomp"),
            "{}",
            no_namespaces.reason
        );
        assert!(decide(SandboxSetting::On, true, true)
            .unwrap_err()
            .contains("root"));
        assert!(decide(SandboxSetting::On, false, true).unwrap().enabled);
        assert!(!decide(SandboxSetting::Off, false, true).unwrap().enabled);
    }

    #[test]
    fn this_machine_answers() {
        // Either answer is fine; the probe must not hang or crash.
        let _ = user_namespaces();
    }
}
