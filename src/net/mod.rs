//! The one place brute's HTTP clients are built: model providers, `fetch`, and whatever else
//! speaks HTTP (MCP over HTTP). Proxies and trusted certificates are handled here once, so
//! every client follows the same conventions people already set for curl and other tools.
//!
//! - **Proxies** come from the environment, read when a client is built: `HTTPS_PROXY` for
//!   https URLs, `HTTP_PROXY` for http URLs, `ALL_PROXY` for both (each also in lowercase; the
//!   uppercase one wins), and `NO_PROXY` for hosts that go direct (comma-separated names, which
//!   also match their subdomains, IP addresses, CIDR ranges, or `*`). These are reqwest's
//!   (hyper-util's) rules, which follow curl's: a loopback address is proxied too unless
//!   `NO_PROXY` names it, so a local model server behind a set `HTTP_PROXY` needs
//!   `NO_PROXY=localhost,127.0.0.1`. `http://`, `https://` and `socks5://` proxy URLs work;
//!   user and password in the proxy URL are sent as proxy authorization. With `REQUEST_METHOD`
//!   set (a CGI environment) `HTTP_PROXY` is ignored, as curl does.
//! - **Certificates**: see [`tls`]. The roots are the system's store, or `SSL_CERT_FILE` /
//!   `SSL_CERT_DIR` when set, loaded at the first TLS handshake and never for plain http.
//!
//! A proxy changes the route, not what brute asks for or accepts: `fetch` still checks the
//! URL's scheme and the permission rules against the URL the model gave, still caps redirects
//! (a proxy's 3xx counts like a server's), the body size and the time budget, and an https
//! URL is tunnelled with CONNECT, so the server's certificate is still verified against the
//! trusted roots (a proxy cannot answer for the server without a CA the person installed).
//! The proxy is chosen by the person's environment, which a model cannot change: processes
//! brute starts get their own environment and run in the sandbox.

pub mod tls;

/// The `User-Agent` of every request brute sends.
pub const USER_AGENT: &str = concat!("brute/", env!("CARGO_PKG_VERSION"));

/// A client builder with brute's network conventions: proxies from the environment, TLS with
/// lazily loaded roots (see [`tls`]) and brute's user agent. Callers add what is theirs
/// (timeouts, redirects, compression) and build it.
pub fn client_builder() -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder().user_agent(USER_AGENT);
    match tls::client_config() {
        Ok(config) => builder.tls_backend_preconfigured(config),
        Err(e) => {
            // reqwest's own TLS set-up still verifies against the same roots, only eagerly.
            tracing::warn!("lazy TLS roots unavailable ({e}); reqwest loads them itself");
            builder
        }
    }
}
