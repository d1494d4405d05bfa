//! TLS client settings shared by the Postgres store and `cuecraft submit`: rustls with the `ring`
//! provider, named here explicitly (never a process-wide default, which the `s3` feature's
//! reqwest would make ambiguous), trusting the certificates of a CA file or the system's store.
//!
//! Three levels of checking, as libpq's `sslmode` values need them: none (encrypted, any server
//! certificate; the handshake's signatures are still checked), the chain (signed by a trusted
//! root, any host name: `verify-ca`), and the chain and the host name (`verify-full`, and
//! every https URL of `cuecraft submit`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// The crypto provider of every TLS connection cuecraft makes.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Makes [`provider`] the process's default, for a client that builds its own TLS config from
/// that default (the S3 store's reqwest, built without a provider of its own). Does nothing when
/// a default is already installed.
#[cfg(feature = "s3")]
pub fn install_process_default() {
    // Err only when some provider is already the default: a second call, or a caller's own.
    let _ = CryptoProvider::install_default(rustls::crypto::ring::default_provider());
}

/// Which certificates are trusted as roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// The system's store (`/etc/ssl/certs`, or `SSL_CERT_FILE` / `SSL_CERT_DIR`).
    System,
    /// The PEM certificates of a file (a private CA).
    File(PathBuf),
}

/// What is checked of the server's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Nothing: the connection is encrypted, but the server is not authenticated.
    Nothing,
    /// That a trusted root signed it, whatever the host name.
    Chain(Roots),
    /// That a trusted root signed it for the host name connected to.
    ChainAndName(Roots),
}

/// The root store of `roots`, or why there is none. Read once, when a client is configured.
pub fn root_store(roots: &Roots) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match roots {
        Roots::File(path) => {
            let certs = read_pem_certificates(path)?;
            let (_, refused) = store.add_parsable_certificates(certs);
            if store.is_empty() {
                return Err(format!(
                    "{}: none of its {refused} certificates can be a root",
                    path.display()
                ));
            }
        }
        Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                let why = found
                    .errors
                    .first()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default();
                return Err(format!(
                    "no root certificate found in the system's store{why}; install the \
                     ca-certificates package or name a CA file"
                ));
            }
        }
    }
    Ok(store)
}

fn read_pem_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: not a PEM certificate file ({e})", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it",
            path.display()
        ));
    }
    Ok(certs)
}

/// A client configuration checking what `check` says, offering `alpn` (may be empty).
pub fn client_config(check: &Check, alpn: &[&[u8]]) -> Result<Arc<ClientConfig>, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let mut config = match check {
        Check::ChainAndName(roots) => builder
            .with_root_certificates(root_store(roots)?)
            .with_no_client_auth(),
        Check::Chain(roots) => {
            let full =
                WebPkiServerVerifier::builder_with_provider(Arc::new(root_store(roots)?), provider)
                    .build()
                    .map_err(|e| format!("TLS: {e}"))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ChainOnly(full)))
                .with_no_client_auth()
        }
        Check::Nothing => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// `verify-ca`: the full check, with a name mismatch forgiven. webpki checks the name last, after
/// the chain, validity dates and key usage, so forgiving it forgives nothing else.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `require` without a CA (libpq's meaning): any certificate; the handshake's signatures are
/// still checked with the certificate's key, so the session keys belong to whoever holds it.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_file_without_certificates_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("missing.pem");
        let err = root_store(&Roots::File(missing.clone())).unwrap_err();
        assert!(err.starts_with(&missing.display().to_string()), "{err}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").expect("write");
        let err = root_store(&Roots::File(empty)).unwrap_err();
        assert!(err.contains("no PEM certificate"), "{err}");
    }
}
