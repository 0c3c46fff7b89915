//! TLS for PostgreSQL connections (rustls with the ring provider, the one
//! the rest of the host uses). Whether TLS is used is the URL's `sslmode`
//! (`disable`, `prefer`, the default, or `require`); when it is, the
//! server's certificate and name are always verified, against the
//! operator's `ca_file` if given, else the system's root certificates
//! (stricter than libpq's `require`, which checks neither).

use std::path::Path;
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{Error, Result};

/// The connector for a database whose `[databases.NAME]` section is
/// `section`, trusting `ca_file` if given.
pub(crate) fn connector(section: &str, ca_file: Option<&Path>) -> Result<MakeRustlsConnect> {
    let mut roots = RootCertStore::empty();
    match ca_file {
        Some(file) => {
            let fail = |message: String| Error::config(section, format!("ca_file {}: {message}", file.display()));
            let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(file)
                .map_err(|e| fail(e.to_string()))?
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| fail(format!("not PEM certificates: {e}")))?;
            if certificates.is_empty() {
                return Err(fail("holds no certificate".into()));
            }
            for certificate in certificates {
                roots.add(certificate).map_err(|e| fail(format!("a certificate is not usable: {e}")))?;
            }
        }
        None => {
            // Certificates the system store cannot parse are skipped, as
            // every TLS client does; an empty store fails at connect time
            // with a certificate error naming the server.
            let native = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(native.certs);
        }
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::internal("TLS for PostgreSQL", e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // PostgreSQL 17's direct TLS (`sslnegotiation=direct`) asks for it;
    // other servers ignore it.
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(MakeRustlsConnect::new(config))
}
