//! The hub's URL and the connection to it. TLS is verified (the certificate chain and the host name, as libpq's
//! `sslmode=verify-full`) whenever the server is not on this machine's loopback; `sslmode=disable` turns it off
//! for a server reached through an SSH tunnel. No mode accepts an unverified certificate.

use super::HubError;
use std::future::Future;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;
use tokio_postgres::config::Host;
use tokio_postgres::{Client, Config, NoTls};

/// How the connection is protected.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tls {
    /// No TLS: the server is on loopback (or the URL says `sslmode=disable`, e.g. behind an SSH tunnel).
    Plain,
    /// TLS with the certificate verified against `sslrootcert` (a PEM file), else the public web roots.
    Verified { root: Option<PathBuf> },
}

/// A hub's URL, parsed: `postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=…&sslrootcert=…`.
#[derive(Clone)]
pub struct HubUrl {
    config: Config,
    tls: Tls,
    /// The URL as given (holds the password: never printed).
    raw: String,
}

impl std::fmt::Debug for HubUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HubUrl({})", self.shown())
    }
}

impl HubUrl {
    /// Parses `raw`; a URL that is not a PostgreSQL one, or names no user, is the caller's to fix.
    pub fn parse(raw: &str) -> Result<Self, HubError> {
        let raw = raw.trim();
        let bad = |message: String| HubError::Invalid {
            arg: "URL",
            message,
        };
        if !(raw.starts_with("postgres://") || raw.starts_with("postgresql://")) {
            return Err(bad(
                "a hub URL starts with postgres:// (postgres://USER:PASSWORD@HOST:PORT/DATABASE)"
                    .into(),
            ));
        }
        let (base, query) = raw.split_once('?').unwrap_or((raw, ""));
        let mut mode = None;
        let mut root = None;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("sslmode", v)) => mode = Some(v.to_string()),
                Some(("sslrootcert", v)) => root = Some(PathBuf::from(v)),
                _ => kept.push(pair),
            }
        }
        let rebuilt = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        let mut config =
            Config::from_str(&rebuilt).map_err(|e| bad(format!("not a PostgreSQL URL: {e}")))?;
        if config.get_user().is_none() {
            return Err(bad(
                "the URL names no user (postgres://USER:PASSWORD@HOST/DB)".into(),
            ));
        }
        let loopback = config.get_hosts().iter().all(|h| match h {
            Host::Tcp(name) => matches!(name.as_str(), "127.0.0.1" | "localhost" | "::1" | "[::1]"),
            #[cfg(unix)]
            Host::Unix(_) => true,
        });
        let tls = match mode.as_deref() {
            Some("disable") => Tls::Plain,
            None if loopback && root.is_none() => Tls::Plain,
            None | Some("allow" | "prefer" | "require" | "verify-ca" | "verify-full") => {
                Tls::Verified { root }
            }
            Some(other) => {
                return Err(bad(format!(
                    "sslmode={other} is not one ghola knows: verify-full (the default off this machine) or disable"
                )));
            }
        };
        config.ssl_mode(match tls {
            Tls::Plain => tokio_postgres::config::SslMode::Disable,
            Tls::Verified { .. } => tokio_postgres::config::SslMode::Require,
        });
        config.connect_timeout(super::CONNECT_TIMEOUT);
        config.application_name("ghola");
        Ok(Self {
            config,
            tls,
            raw: raw.to_string(),
        })
    }

    /// The user the URL logs in as.
    pub fn user(&self) -> &str {
        self.config.get_user().unwrap_or("")
    }

    /// The database's name (the user's name when the URL names none, as PostgreSQL does).
    pub fn dbname(&self) -> &str {
        self.config.get_dbname().unwrap_or_else(|| self.user())
    }

    /// Where the hub is, without credentials: `host:port/db`, for messages.
    pub fn shown(&self) -> String {
        let host = self
            .config
            .get_hosts()
            .first()
            .map(|h| match h {
                Host::Tcp(n) => n.clone(),
                #[cfg(unix)]
                Host::Unix(p) => p.display().to_string(),
            })
            .unwrap_or_else(|| "localhost".into());
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        format!("{host}:{port}/{}", self.dbname())
    }

    /// The URL as given, with its password: written to this machine's private hub files only.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// This URL for another user and password (an invitation): the same host, database and parameters.
    pub fn for_user(&self, user: &str, password: &str) -> String {
        let scheme_end = self.raw.find("://").map_or(0, |i| i + 3);
        let rest = &self.raw[scheme_end..];
        let host_start = rest.find('@').map_or(0, |i| i + 1);
        format!(
            "{}{user}:{password}@{}",
            &self.raw[..scheme_end],
            &rest[host_start..]
        )
    }
}

/// Connects as `url` says, the connection driven on the current runtime; the hub unreachable or the login
/// refused is [`HubError::Connect`].
pub async fn connect(url: &HubUrl) -> Result<Client, HubError> {
    let failed = |detail: String| HubError::Connect {
        at: url.shown(),
        detail,
    };
    let (client, conn) = match &url.tls {
        Tls::Plain => {
            let (client, conn) = url
                .config
                .connect(NoTls)
                .await
                .map_err(|e| failed(super::detail(&e)))?;
            (client, drive(conn))
        }
        Tls::Verified { root } => {
            let tls = tls_config(root.as_deref()).map_err(failed)?;
            let (client, conn) = url
                .config
                .connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
                .await
                .map_err(|e| failed(super::detail(&e)))?;
            (client, drive(conn))
        }
    };
    tokio::spawn(conn);
    Ok(client)
}

/// The connection's own work (it carries the client's messages), as a task to run beside the client.
fn drive(
    conn: impl Future<Output = Result<(), tokio_postgres::Error>> + Send + 'static,
) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        if let Err(e) = conn.await {
            tracing::debug!("hub connection ended: {e}");
        }
    })
}

/// rustls with the roots of `root` (a PEM file of the server's CA) or else the public web roots.
fn tls_config(root: Option<&std::path::Path>) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    match root {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
            for c in certs {
                let c = c.map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
                roots
                    .add(c)
                    .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Runs `fut` to completion from synchronous code, within `limit`: on a runtime of its own, on a thread of its
/// own when the caller is already inside one (the MCP server), so that blocking never stalls that runtime.
pub fn block<T: Send>(
    limit: Duration,
    fut: impl Future<Output = Result<T, HubError>> + Send,
) -> Result<T, HubError> {
    let run = move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| HubError::Io {
                path: PathBuf::from("(tokio runtime)"),
                source,
            })?;
        rt.block_on(async move {
            match tokio::time::timeout(limit, fut).await {
                Ok(r) => r,
                Err(_) => Err(HubError::Timeout(limit)),
            }
        })
    };
    if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|s| s.spawn(run).join().unwrap_or(Err(HubError::Timeout(limit))))
    } else {
        run()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_is_verified_off_loopback_and_urls_keep_their_parameters() {
        let local = HubUrl::parse("postgres://ghola_admin:pw@127.0.0.1:5544/hub").unwrap();
        assert_eq!(local.tls, Tls::Plain);
        assert_eq!(local.shown(), "127.0.0.1:5544/hub");
        assert!(!format!("{local:?}").contains("pw"));
        let far = HubUrl::parse("postgres://a:b@db.example.com/hub").unwrap();
        assert_eq!(far.tls, Tls::Verified { root: None });
        let tunnel = HubUrl::parse("postgres://a:b@db.example.com/hub?sslmode=disable").unwrap();
        assert_eq!(tunnel.tls, Tls::Plain);
        let with = HubUrl::parse(
            "postgres://admin:secret@h:5/hub?sslmode=verify-full&sslrootcert=/ca.pem",
        )
        .unwrap();
        assert_eq!(
            with.for_user("ghola_bob", "xyz"),
            "postgres://ghola_bob:xyz@h:5/hub?sslmode=verify-full&sslrootcert=/ca.pem"
        );
        assert!(HubUrl::parse("mysql://a@b/c").is_err());
        assert!(HubUrl::parse("postgres://a:b@h/c?sslmode=sometimes").is_err());
    }
}
