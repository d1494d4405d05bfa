//! Child processes (ffprobe, ffmpeg, recognizers) that end with the server.

use std::process::Command;

/// Makes the process `cmd` starts receive SIGKILL when the thread that started it ends, the
/// server being killed included. Without it a crashed server leaves its decoders running for
/// nobody, and after the restart the resumed job's decoder competes with its own orphan for the
/// cores. Every caller waits for the child on the thread that spawned it, so the thread outlives
/// the child in normal operation; the whisper worker processes, which outlive the job that
/// started them, are all started from one thread that lasts as long as the server. Only Linux has the mechanism; elsewhere `cmd` is unchanged.
pub fn ends_with_server(cmd: &mut Command) -> &mut Command {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let server = std::process::id() as libc::pid_t;
        #[allow(unsafe_code)]
        // SAFETY: the hook runs in the forked child before exec, where only async-signal-safe
        // calls are allowed: it makes two system calls (prctl, getppid) and allocates nothing
        // (`from_raw_os_error` and `last_os_error` build an `io::Error` without allocating).
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                // The server died between the fork and the prctl: the signal will never come.
                if libc::getppid() != server {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    #[test]
    fn a_child_started_this_way_runs_and_reports_normally() {
        let out = ends_with_server(Command::new("sh").args(["-c", "echo ok; exit 3"]))
            .stdout(Stdio::piped())
            .output()
            .expect("sh runs");
        assert_eq!(out.stdout, b"ok\n");
        assert_eq!(out.status.code(), Some(3));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_child_is_killed_when_the_thread_that_started_it_ends() {
        use std::os::unix::process::ExitStatusExt;
        // The thread stands for the server: it starts a long sleep and ends without waiting.
        let mut child = std::thread::spawn(|| {
            ends_with_server(Command::new("sleep").arg("30"))
                .spawn()
                .expect("sleep runs")
        })
        .join()
        .expect("thread");
        let status = child.wait().expect("wait");
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    }

    #[test]
    fn a_missing_program_is_still_a_spawn_error() {
        let err = ends_with_server(&mut Command::new("/nonexistent/cuecraft-no-such-program"))
            .output()
            .expect_err("no such program");
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }
}
