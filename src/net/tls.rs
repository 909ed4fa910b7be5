//! TLS for brute's HTTP clients: rustls with ring, verifying servers against root
//! certificates that are loaded at the first TLS handshake, not when a client is built.
//!
//! Loading the system's roots reads and parses a few hundred certificates (every file of
//! `/etc/ssl/certs` on some systems); a run against a plain-http local server needs none of
//! them, and a run against an https server needs them only once the server's certificate
//! arrives. So the verifier given to every client is [`LazyVerifier`], which loads the roots
//! once per process, shared by all clients, the first time a certificate is checked.
//!
//! Which roots: `SSL_CERT_FILE` (a PEM bundle) and/or `SSL_CERT_DIR` (directories of PEM
//! files, `:`-separated) when either is set, in place of the system store, as OpenSSL and
//! curl do; otherwise the system store (on Linux the distribution's bundle; on macOS and
//! Windows the platform verifier, which asks the OS). Never a bundled list: a person's own CA
//! (a company proxy, a lab server) must keep working.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// Where the roots come from, as the person would name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `SSL_CERT_FILE` and/or `SSL_CERT_DIR`, as set.
    Env(String),
    /// The operating system's store.
    System,
}

impl Source {
    /// Reads `SSL_CERT_FILE` and `SSL_CERT_DIR` as the loader (`rustls-native-certs`) does:
    /// a set `SSL_CERT_FILE` counts even when empty, `SSL_CERT_DIR` only with a directory in it.
    pub fn from_env() -> Self {
        let file = std::env::var_os("SSL_CERT_FILE").map(|v| format!("SSL_CERT_FILE={}", v.to_string_lossy()));
        let dir = std::env::var_os("SSL_CERT_DIR")
            .filter(|v| std::env::split_paths(v).any(|p| !p.as_os_str().is_empty()))
            .map(|v| format!("SSL_CERT_DIR={}", v.to_string_lossy()));
        let named: Vec<String> = file.into_iter().chain(dir).collect();
        if named.is_empty() {
            Source::System
        } else {
            Source::Env(named.join(", "))
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Env(vars) => f.write_str(vars),
            Source::System => f.write_str("the system store"),
        }
    }
}

/// Why no server could be verified: there were no usable roots.
#[derive(Debug, Clone, thiserror::Error)]
#[error("no trusted root certificates could be loaded from {from}{}", detail(.problems))]
pub struct RootsError {
    pub from: Source,
    /// What went wrong reading them (a missing file, a bad PEM block), one entry each.
    pub problems: Vec<String>,
}

fn detail(problems: &[String]) -> String {
    if problems.is_empty() {
        String::new()
    } else {
        format!(" ({})", problems.join("; "))
    }
}

/// Loaded roots: the verifier built from them and where they came from.
pub struct Roots {
    pub verifier: Arc<dyn ServerCertVerifier>,
    pub source: Source,
}

/// Builds the verifier from the roots the environment names (done once, at the first
/// handshake).
pub type Loader = fn(&Arc<CryptoProvider>) -> Result<Roots, RootsError>;

/// A certificate verifier that loads its roots the first time a server's certificate is
/// checked. Handshake signatures need no roots and are checked with the provider's
/// algorithms directly, as rustls' own verifier does.
pub struct LazyVerifier {
    provider: Arc<CryptoProvider>,
    load: Loader,
    roots: OnceLock<Result<Roots, RootsError>>,
}

impl fmt::Debug for LazyVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazyVerifier")
            .field("loaded", &self.loaded())
            .finish_non_exhaustive()
    }
}

impl LazyVerifier {
    pub fn new(provider: Arc<CryptoProvider>, load: Loader) -> Self {
        Self {
            provider,
            load,
            roots: OnceLock::new(),
        }
    }

    /// Whether the roots were loaded (or their loading tried).
    pub fn loaded(&self) -> bool {
        self.roots.get().is_some()
    }

    /// The roots, loading them on the first call.
    pub fn roots(&self) -> Result<&Roots, &RootsError> {
        self.roots.get_or_init(|| (self.load)(&self.provider)).as_ref()
    }
}

impl ServerCertVerifier for LazyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // rustls shows its other certificate errors by their debug form; a plain message reads
        // better ("unexpected error: no trusted root certificates ...").
        let roots = self.roots().map_err(|e| rustls::Error::General(e.to_string()))?;
        roots
            .verifier
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// What to add to a connection error that says the server's certificate has an unknown
/// issuer (rustls: `invalid peer certificate: UnknownIssuer`): which roots were used and what
/// to set for a private CA. `None` for other errors.
pub fn hint(error: &str) -> Option<String> {
    if !error.contains("UnknownIssuer") {
        return None;
    }
    let from = match shared_verifier().roots.get() {
        Some(Ok(roots)) => roots.source.clone(),
        _ => Source::from_env(),
    };
    Some(format!(
        "the certificate's issuer is not among the trusted roots ({from}); for a private CA, set SSL_CERT_FILE or SSL_CERT_DIR to its PEM certificate"
    ))
}

/// `error` with its [`hint`], if it has one.
pub fn explain(error: String) -> String {
    match hint(&error) {
        Some(hint) => format!("{error} ({hint})"),
        None => error,
    }
}

/// Installs rustls' ring crypto provider once per process (reqwest is built without one so
/// that no C toolchain beyond ring's is needed), and returns the process default.
pub fn crypto_provider() -> Arc<CryptoProvider> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

/// The verifier every client of this process shares, so the roots are loaded at most once.
pub fn shared_verifier() -> &'static Arc<LazyVerifier> {
    static SHARED: OnceLock<Arc<LazyVerifier>> = OnceLock::new();
    SHARED.get_or_init(|| Arc::new(LazyVerifier::new(crypto_provider(), load_roots)))
}

/// Whether this process has loaded its TLS roots yet (a plain-http run never does).
pub fn roots_loaded() -> bool {
    shared_verifier().loaded()
}

/// Starts loading the roots on a thread of their own, for a client that will speak https: the
/// load then overlaps the rest of start-up and the connection, instead of waiting for the
/// server's certificate.
pub fn preload() {
    let verifier = shared_verifier().clone();
    if verifier.loaded() {
        return;
    }
    let _ = std::thread::Builder::new().name("tls-roots".to_owned()).spawn(move || {
        let _ = verifier.roots();
    });
}

/// A rustls client configuration with the shared lazy verifier, offering HTTP/2 and
/// HTTP/1.1 (what reqwest offers itself). Building it reads no certificates; it fails only if
/// the process's crypto provider supports none of rustls' default protocol versions.
pub fn client_config() -> Result<rustls::ClientConfig, rustls::Error> {
    let verifier = shared_verifier().clone();
    let mut config = rustls::ClientConfig::builder_with_provider(verifier.provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Loads the roots the environment names (see the module docs) and builds a verifier.
pub fn load_roots(provider: &Arc<CryptoProvider>) -> Result<Roots, RootsError> {
    let started = Instant::now();
    let source = Source::from_env();
    let verifier = match source {
        Source::System => system_verifier(provider)?,
        Source::Env(_) => webpki_verifier(provider, &source)?,
    };
    tracing::info!("TLS roots loaded from {source} in {:?}", started.elapsed());
    Ok(Roots { verifier, source })
}

/// rustls' WebPKI verifier over the certificates `rustls-native-certs` reads (the
/// `SSL_CERT_*` paths when set, else the system bundle).
fn webpki_verifier(provider: &Arc<CryptoProvider>, source: &Source) -> Result<Arc<dyn ServerCertVerifier>, RootsError> {
    let loaded = rustls_native_certs::load_native_certs();
    let mut problems: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    let mut store = RootCertStore::empty();
    let (added, ignored) = store.add_parsable_certificates(loaded.certs);
    if ignored > 0 {
        problems.push(format!("{ignored} certificates could not be used"));
    }
    for problem in &problems {
        tracing::warn!("TLS roots from {source}: {problem}");
    }
    if store.is_empty() {
        return Err(RootsError {
            from: source.clone(),
            problems,
        });
    }
    tracing::debug!("{added} TLS roots from {source}");
    WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
        .build()
        .map(|v| v as Arc<dyn ServerCertVerifier>)
        .map_err(|e| RootsError {
            from: source.clone(),
            problems: vec![e.to_string()],
        })
}

/// The system store through the platform's verifier (macOS, Windows: the OS decides).
#[cfg(not(all(unix, not(target_os = "android"), not(target_vendor = "apple"))))]
fn system_verifier(provider: &Arc<CryptoProvider>) -> Result<Arc<dyn ServerCertVerifier>, RootsError> {
    rustls_platform_verifier::Verifier::new(provider.clone())
        .map(|v| Arc::new(v) as Arc<dyn ServerCertVerifier>)
        .map_err(|e| RootsError {
            from: Source::System,
            problems: vec![e.to_string()],
        })
}

/// The system store read as files (Linux and other Unix systems, where that is what the
/// store is: the distribution's bundle and certificate directories).
#[cfg(all(unix, not(target_os = "android"), not(target_vendor = "apple")))]
fn system_verifier(provider: &Arc<CryptoProvider>) -> Result<Arc<dyn ServerCertVerifier>, RootsError> {
    webpki_verifier(provider, &Source::System)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    static LOADS: AtomicUsize = AtomicUsize::new(0);

    fn counting_loader(_: &Arc<CryptoProvider>) -> Result<Roots, RootsError> {
        LOADS.fetch_add(1, Ordering::SeqCst);
        Err(RootsError {
            from: Source::Env("SSL_CERT_FILE=/nowhere".into()),
            problems: vec!["no such file".into()],
        })
    }

    #[test]
    fn roots_load_at_the_first_certificate_check_and_once() {
        let verifier = LazyVerifier::new(crypto_provider(), counting_loader);
        // Building a client configuration and asking for the schemes loads nothing.
        assert!(!verifier.supported_verify_schemes().is_empty());
        assert!(!verifier.loaded());
        assert_eq!(LOADS.load(Ordering::SeqCst), 0);
        let name = ServerName::try_from("example.test").unwrap();
        for _ in 0..2 {
            let err = verifier
                .verify_server_cert(&CertificateDer::from(vec![0u8; 4]), &[], &name, &[], UnixTime::now())
                .unwrap_err();
            assert_eq!(
                err.to_string(),
                "unexpected error: no trusted root certificates could be loaded from SSL_CERT_FILE=/nowhere (no such file)"
            );
        }
        assert!(verifier.loaded());
        assert_eq!(LOADS.load(Ordering::SeqCst), 1, "loaded once, failure included");
    }

    #[test]
    fn an_unknown_issuer_is_explained_and_other_errors_are_not() {
        let explained = explain("invalid peer certificate: UnknownIssuer".to_owned());
        assert!(
            explained.starts_with(
                "invalid peer certificate: UnknownIssuer (the certificate's issuer is not among the trusted roots ("
            ) && explained.ends_with("); for a private CA, set SSL_CERT_FILE or SSL_CERT_DIR to its PEM certificate)"),
            "{explained}"
        );
        assert_eq!(explain("Connection refused".to_owned()), "Connection refused");
    }
}
