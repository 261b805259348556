//! The ssh command every remote operation runs: the system's OpenSSH client (or `GHOLA_SSH`), which reads the
//! user's `~/.ssh/config` and agent as usual, with the options that keep it from prompting or hanging.

use super::Remote;
use std::process::Command;

/// Seconds ssh waits for the connection (and, twice over, for a silent server) before it gives up.
pub const CONNECT_TIMEOUT_SECONDS: u32 = 10;

/// How to run ssh toward one remote.
#[derive(Debug, Clone)]
pub struct Ssh {
    /// The program and its own arguments (`ssh`, or `GHOLA_SSH` split at whitespace).
    program: Vec<String>,
    /// The options and the destination.
    args: Vec<String>,
}

impl Ssh {
    /// The command toward `remote`; `custom` is `GHOLA_SSH` when set.
    pub fn new(remote: &Remote, custom: Option<&str>) -> Ssh {
        let program: Vec<String> = custom
            .map(|c| c.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| vec!["ssh".into()]);
        let mut args: Vec<String> = [
            // Never a password, passphrase or host-key question: a sync runs unattended.
            "-o",
            "BatchMode=yes",
            "-o",
            &format!("ConnectTimeout={CONNECT_TIMEOUT_SECONDS}"),
            // A server that stops answering mid-sync is dropped within half a minute.
            "-o",
            "ServerAliveInterval=10",
            "-o",
            "ServerAliveCountMax=2",
            "-T",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if let Some(p) = remote.port {
            args.extend(["-p".into(), p.to_string()]);
        }
        if let Some(i) = &remote.identity {
            args.extend([
                "-i".into(),
                i.display().to_string(),
                "-o".into(),
                "IdentitiesOnly=yes".into(),
            ]);
        }
        // Nothing after the destination is read as an option.
        args.push("--".into());
        args.push(remote.host.clone());
        Ssh { program, args }
    }

    /// A command that runs `remote_command` (a line for the remote user's shell) on the remote.
    pub fn command(&self, remote_command: &str) -> Command {
        let mut c = Command::new(&self.program[0]);
        c.args(&self.program[1..])
            .args(&self.args)
            .arg(remote_command);
        c
    }

    /// The remote shell rsync is told to use (`rsync -e`): the ssh program and options without the destination,
    /// each word quoted for rsync's own splitting.
    pub fn for_rsync(&self) -> String {
        self.program
            .iter()
            .chain(self.args.iter().take(self.args.len() - 2))
            .map(|w| quote(w))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `s` single-quoted for a POSIX shell (and for rsync's `-e` splitting, which honours the same quotes).
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=@:,+%".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A remote path for the remote shell: `~/x` stays relative to the remote user's home (`"$HOME"/'x'`), the rest
/// is quoted whole.
pub fn remote_path(p: &str) -> String {
    match p.strip_prefix("~/") {
        Some(rest) if !rest.is_empty() => format!("\"$HOME\"/{}", quote(rest)),
        _ if p == "~" => "\"$HOME\"".into(),
        _ => quote(p),
    }
}

/// What ssh's exit status 255 and its last words mean, as advice: the message for a failed connection.
pub fn explain(remote: &Remote, stderr: &str) -> String {
    let said = stderr
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with("Warning: Permanently added"))
        .unwrap_or("ssh failed without a message")
        .to_string();
    let lower = stderr.to_ascii_lowercase();
    let host = &remote.host;
    let advice = if lower.contains("host key verification failed")
        || lower.contains("no matching host key")
    {
        format!(
            "its host key is not known here: connect once with `ssh {host}` to check and trust it"
        )
    } else if lower.contains("remote host identification has changed") {
        format!(
            "its host key CHANGED since it was trusted: check why before you trust it again (`ssh {host}`)"
        )
    } else if lower.contains("permission denied") {
        "it refused the key: give one with `--identity FILE`, load it in your ssh agent, or name it in ~/.ssh/config"
            .into()
    } else if lower.contains("connection refused") {
        "nothing listens for ssh there (is the machine up, and the port right?)".into()
    } else if lower.contains("timed out") || lower.contains("no route to host") {
        "it did not answer in time (down, asleep or unreachable)".into()
    } else if lower.contains("could not resolve hostname")
        || lower.contains("name or service not known")
    {
        "its name does not resolve".into()
    } else {
        "ssh could not connect".into()
    };
    format!("{advice} (ssh said: {said})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_never_prompts_and_quotes_what_it_hands_on() {
        let r = Remote {
            name: "dev".into(),
            host: "me@dev.example".into(),
            port: Some(2222),
            identity: Some("/home/me/.ssh/id two".into()),
            claude_dir: "~/.claude".into(),
            map: Vec::new(),
            auto_map: Vec::new(),
            added: String::new(),
        };
        let ssh = Ssh::new(&r, None);
        let c = ssh.command("true");
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(c.get_program(), "ssh");
        assert!(args.windows(2).any(|w| w == ["-o", "BatchMode=yes"]));
        assert!(args.windows(2).any(|w| w == ["-p", "2222"]));
        assert!(args.ends_with(&["--".into(), "me@dev.example".into(), "true".into()]));
        assert_eq!(
            Ssh::new(&r, Some("ssh -F /tmp/cfg"))
                .command("x")
                .get_args()
                .next()
                .unwrap(),
            "-F"
        );
        let e = ssh.for_rsync();
        assert!(
            e.starts_with("ssh -o BatchMode=yes") && e.contains("'/home/me/.ssh/id two'"),
            "{e}"
        );
        assert!(!e.contains("dev.example"));
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(remote_path("~/.claude"), "\"$HOME\"/.claude");
        assert_eq!(remote_path("/srv/a b"), "'/srv/a b'");
        assert!(
            explain(&r, "Host key verification failed.\n")
                .contains("connect once with `ssh me@dev.example`")
        );
        assert!(explain(&r, "me@dev: Permission denied (publickey).").contains("--identity"));
    }
}
