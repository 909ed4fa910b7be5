//! Network parts for the proxy and certificate tests, all on 127.0.0.1: a forward/CONNECT
//! proxy that records what it carried, and a TLS front (with a certificate authority made at
//! test time) that terminates TLS and passes the bytes on to a `MockServer`.
//!
//! Only `tests/network.rs` includes it (by path), so the other test binaries do not compile
//! the certificate generator.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Binds 127.0.0.1 on a free port and runs `serve` for each connection on a runtime of its
/// own thread; returns the port.
fn listen<F, Fut>(serve: F) -> u16
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let port = listener.local_addr().expect("local addr").port();
    listener.set_nonblocking(true).expect("non-blocking listener");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the test server");
        runtime.block_on(async move {
            let listener = TcpListener::from_std(listener).expect("tokio listener");
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream));
            }
        });
    });
    port
}

/// A proxy: HTTP `CONNECT host:port` tunnels, a request with an absolute URL
/// (`GET http://host:port/path`) is sent on to that host in origin form, and a SOCKS5
/// `CONNECT` (no authentication) tunnels too. Each request it received is recorded
/// (`CONNECT 127.0.0.1:4431`, `POST http://127.0.0.1:4430/v1/...`, `SOCKS5 127.0.0.1:4430`).
#[derive(Clone)]
pub struct Proxy {
    pub port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    pub fn start() -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let port = listen(move |stream| proxy(stream, log.clone()));
        Self { port, seen }
    }

    /// `http://127.0.0.1:PORT`, for `HTTP_PROXY` / `HTTPS_PROXY`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The request lines received, in order.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

async fn proxy(client: TcpStream, seen: Arc<Mutex<Vec<String>>>) {
    let mut client = BufReader::new(client);
    if client.fill_buf().await.is_ok_and(|b| b.first() == Some(&5)) {
        return socks5(client, seen).await;
    }
    let mut head = String::new();
    loop {
        let before = head.len();
        if client.read_line(&mut head).await.unwrap_or(0) == 0 {
            return;
        }
        if head[before..].trim_end().is_empty() {
            break;
        }
    }
    let (line, headers) = head.split_once("\r\n").unwrap_or((&head, ""));
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    seen.lock().unwrap().push(format!("{method} {target}"));
    let (authority, forward) = if method == "CONNECT" {
        (target.to_owned(), None)
    } else {
        let Some(rest) = target.strip_prefix("http://") else {
            return;
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        (
            authority.to_owned(),
            Some(format!("{method} {path} {version}\r\n{headers}")),
        )
    };
    let Ok(mut upstream) = TcpStream::connect(authority.as_str()).await else {
        let _ = client
            .get_mut()
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    };
    match forward {
        None => {
            if client
                .get_mut()
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
        }
        Some(head) => {
            if upstream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
        }
    }
    // What the client sent beyond the head (a request body) is still in the reader's buffer.
    let buffered = client.buffer().to_vec();
    if upstream.write_all(&buffered).await.is_err() {
        return;
    }
    let mut client = client.into_inner();
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// The SOCKS5 side of [`Proxy`]: no authentication, `CONNECT` to an IPv4 address or a name.
async fn socks5(mut client: BufReader<TcpStream>, seen: Arc<Mutex<Vec<String>>>) {
    let mut greeting = [0u8; 2];
    if client.read_exact(&mut greeting).await.is_err() {
        return;
    }
    let mut methods = vec![0u8; usize::from(greeting[1])];
    if client.read_exact(&mut methods).await.is_err() || client.write_all(&[5, 0]).await.is_err() {
        return;
    }
    let mut request = [0u8; 4];
    if client.read_exact(&mut request).await.is_err() || request[1] != 1 {
        return;
    }
    let host = match request[3] {
        1 => {
            let mut ip = [0u8; 4];
            if client.read_exact(&mut ip).await.is_err() {
                return;
            }
            std::net::Ipv4Addr::from(ip).to_string()
        }
        3 => {
            let mut len = [0u8; 1];
            if client.read_exact(&mut len).await.is_err() {
                return;
            }
            let mut name = vec![0u8; usize::from(len[0])];
            if client.read_exact(&mut name).await.is_err() {
                return;
            }
            String::from_utf8_lossy(&name).into_owned()
        }
        _ => return,
    };
    let mut port = [0u8; 2];
    if client.read_exact(&mut port).await.is_err() {
        return;
    }
    let target = format!("{host}:{}", u16::from_be_bytes(port));
    seen.lock().unwrap().push(format!("SOCKS5 {target}"));
    let Ok(mut upstream) = TcpStream::connect(target.as_str()).await else {
        let _ = client.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]).await;
        return;
    };
    if client.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// A certificate authority made for one test, and a server certificate it signed for
/// `127.0.0.1` and `localhost`.
pub struct TestCa {
    /// The CA's certificate, PEM (what `SSL_CERT_FILE` points at).
    pub ca_pem: String,
    server_chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    server_key: Vec<u8>,
}

impl TestCa {
    pub fn new() -> Self {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, "brute test CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca, ca_key);
        let server_key = KeyPair::generate().expect("server key");
        let mut server = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).expect("params");
        server.distinguished_name.push(DnType::CommonName, "brute test server");
        let server_cert = server.signed_by(&server_key, &issuer).expect("server certificate");
        Self {
            ca_pem: ca_cert.pem(),
            server_chain: vec![server_cert.der().clone()],
            server_key: server_key.serialize_der(),
        }
    }

    /// Writes the CA certificate to `dir/name` and returns the path.
    pub fn write_ca(&self, dir: &Path, name: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, &self.ca_pem).expect("write the CA certificate");
        path
    }

    /// Terminates TLS on 127.0.0.1 with this CA's server certificate and passes each
    /// connection's bytes on to `upstream` (a plain-http server); returns the port.
    pub fn front(&self, upstream: u16) -> u16 {
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(self.server_key.clone().into());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(self.server_chain.clone(), key)
            .expect("server certificate and key");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let upstream = SocketAddr::from(([127, 0, 0, 1], upstream));
        listen(move |stream| {
            let acceptor = acceptor.clone();
            async move {
                // A client that refuses the certificate ends the handshake; nothing to pass on.
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let Ok(mut plain) = TcpStream::connect(upstream).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                let _ = tls.shutdown().await;
            }
        })
    }
}
