//! A TLS-terminating proxy for the tests, as a deployment's reverse proxy is: rustls with a test
//! CA's server certificate on 127.0.0.1, every connection's bytes passed on to a server's plain
//! port on loopback.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The proxy; stops when dropped (its runtime with it).
pub struct TlsProxy {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    upstream: Arc<OnceLock<u16>>,
    handshakes: Arc<AtomicUsize>,
    _runtime: tokio::runtime::Runtime,
}

impl TlsProxy {
    /// Listens at once with the PEM certificate chain `cert` and key `key`; connections are
    /// dropped until [`TlsProxy::forward_to`] names the upstream port.
    pub fn start(cert: &Path, key: &Path) -> TlsProxy {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .expect("read the certificate")
            .collect::<Result<_, _>>()
            .expect("PEM certificate");
        let key = PrivateKeyDer::from_pem_file(key).expect("PEM key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("server certificate");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

        // A port of free_port's registry, so that no test's server is handed it as well.
        let listener =
            std::net::TcpListener::bind(("127.0.0.1", super::free_port())).expect("bind the proxy");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("address").port();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("proxy runtime");
        let upstream: Arc<OnceLock<u16>> = Arc::default();
        let handshakes: Arc<AtomicUsize> = Arc::default();
        let (to, count) = (upstream.clone(), handshakes.clone());
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, to, count) = (acceptor.clone(), to.clone(), count.clone());
                tokio::spawn(async move {
                    let Some(port) = to.get().copied() else {
                        return;
                    };
                    // A client that refuses the certificate ends the handshake here.
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    count.fetch_add(1, Ordering::SeqCst);
                    let Ok(mut plain) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await
                    else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        TlsProxy {
            port,
            upstream,
            handshakes,
            _runtime: runtime,
        }
    }

    /// Passes connections on to 127.0.0.1:`port` from now on.
    pub fn forward_to(&self, port: u16) {
        let _ = self.upstream.set(port);
    }

    /// TLS handshakes completed so far.
    pub fn handshakes(&self) -> usize {
        self.handshakes.load(Ordering::SeqCst)
    }
}
