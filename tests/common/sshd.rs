//! A real OpenSSH server on 127.0.0.1 for the remote tests: Debian's `sshd` with a fresh host key and client key
//! in a temporary folder, on a free port, logging in as the user running the tests (root in CI).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running `sshd -D`, stopped when dropped.
pub struct Sshd {
    child: Option<Child>,
    pub port: u16,
    dir: tempfile::TempDir,
    /// The client's private key.
    pub key: PathBuf,
    /// A known_hosts file that trusts this server's host key.
    pub known_hosts: PathBuf,
}

/// The `sshd` binary, if installed.
pub fn sshd_bin() -> Option<PathBuf> {
    ["/usr/sbin/sshd", "/usr/bin/sshd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "ssh-keygen failed");
}

impl Sshd {
    /// Starts a server; `path` is the PATH its sessions get (to leave rsync out), else its default.
    pub fn start(path: Option<&str>) -> Option<Sshd> {
        let bin = sshd_bin()?;
        let dir = tempfile::tempdir().unwrap();
        let host_key = dir.path().join("host_key");
        let key = dir.path().join("client_key");
        keygen(&host_key);
        keygen(&key);
        std::fs::copy(
            key.with_extension("pub"),
            dir.path().join("authorized_keys"),
        )
        .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile {d}/sshd.pid\nAuthorizedKeysFile {d}/authorized_keys\n\
             StrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PermitRootLogin prohibit-password\nLogLevel ERROR\n",
            hk = host_key.display(),
            d = dir.path().display()
        );
        if let Some(p) = path {
            config.push_str(&format!("SetEnv PATH={p}\n"));
        }
        let cfg = dir.path().join("sshd_config");
        std::fs::write(&cfg, config).unwrap();
        let _ = std::fs::create_dir_all("/run/sshd");
        let pub_host = std::fs::read_to_string(host_key.with_extension("pub")).unwrap();
        let known_hosts = dir.path().join("known_hosts");
        std::fs::write(&known_hosts, format!("[127.0.0.1]:{port} {pub_host}")).unwrap();
        let child = Command::new(bin)
            .args(["-D", "-e", "-f"])
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let s = Sshd {
            child: Some(child),
            port,
            dir,
            key,
            known_hosts,
        };
        super::wait_for("sshd to listen", std::time::Duration::from_secs(20), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Some(s)
    }

    /// What `GHOLA_SSH` is set to: ssh with this server's known host and the client key, and nothing of the
    /// user's own configuration.
    pub fn ghola_ssh(&self) -> String {
        format!(
            "ssh -F /dev/null -o UserKnownHostsFile={} -o GlobalKnownHostsFile=/dev/null -i {} -o IdentitiesOnly=yes",
            self.known_hosts.display(),
            self.key.display()
        )
    }

    /// The same, trusting no host key.
    pub fn ghola_ssh_unknown_host(&self) -> String {
        format!(
            "ssh -F /dev/null -o UserKnownHostsFile=/dev/null -o GlobalKnownHostsFile=/dev/null -i {}",
            self.key.display()
        )
    }

    /// The user to log in as: whoever runs the tests.
    pub fn user(&self) -> String {
        std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "root".into())
    }

    /// `user@127.0.0.1`.
    pub fn target(&self) -> String {
        format!("{}@127.0.0.1", self.user())
    }

    /// A folder for the "remote" side's files.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Stops the server (a sync after this must fail clearly).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}
