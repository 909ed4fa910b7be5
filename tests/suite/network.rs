//! Proxies and certificates for the real binary, all on 127.0.0.1: provider requests and
//! `fetch` go through `HTTP_PROXY` / `HTTPS_PROXY` unless `NO_PROXY` names the host; a
//! server with a private CA is trusted through `SSL_CERT_FILE` or `SSL_CERT_DIR` and refused
//! without them, with an error that names the problem; and a plain-http run never loads the
//! root certificates.

use crate::support::{self, net};

use net::{Proxy, TestCa};
use predicates::str::contains;
use support::{MockServer, Reply, Sandbox, openai_sse, tool_results};

/// An https base URL for `port` on 127.0.0.1.
fn https(port: u16, suffix: &str) -> String {
    format!("https://127.0.0.1:{port}{suffix}")
}

/// `brute -p x` in `sb` against the OpenAI-compatible API at `base_url`.
fn brute_at(sb: &Sandbox, base_url: &str) -> assert_cmd::Command {
    let mut cmd = sb.bare();
    cmd.args([
        "--provider",
        "openai",
        "--model",
        "mock-model",
        "--base-url",
        base_url,
        "-p",
        "x",
    ]);
    cmd
}

/// The log of the runs in `sb` (brute logs only when its data directory exists).
fn enable_log(sb: &Sandbox) -> std::path::PathBuf {
    let data = sb.home.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    data.join("brute.log")
}

#[test]
fn a_provider_request_and_a_fetch_go_through_http_proxy() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let proxy = Proxy::start();
    let page = server.url("/page");
    server.push(Reply::sse(openai_sse(
        "",
        &[("f", "fetch", &format!(r#"{{"url":"{page}"}}"#))],
    )));
    server.push(Reply::json(200, "the page").header("content-type", "text/plain"));
    server.push(Reply::sse(openai_sse("done", &[])));
    sb.brute(&server)
        .env("HTTP_PROXY", proxy.url())
        .args(["-p", "x"])
        .assert()
        .success()
        .stdout(contains("done"));
    let chat = server.url("/v1/chat/completions");
    // The server's own window reports (`/props`, `/api/show`) are asked through it too, at
    // start and concurrently with the first request.
    let (probes, conversation): (Vec<String>, Vec<String>) = proxy
        .seen()
        .into_iter()
        .partition(|r| r.ends_with("/props") || r.ends_with("/api/show"));
    assert_eq!(
        conversation,
        [format!("POST {chat}"), format!("GET {page}"), format!("POST {chat}")]
    );
    assert_eq!(probes.len(), 2, "{probes:?}");
    let results = tool_results(&server.requests()[2]);
    assert!(results[0].1.ends_with("\n\nthe page"), "{results:?}");
}

#[test]
fn no_proxy_sends_the_hosts_it_names_direct() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let proxy = Proxy::start();
    server.push(Reply::sse(openai_sse("direct", &[])));
    sb.brute(&server)
        .env("ALL_PROXY", proxy.url())
        .env("no_proxy", "models.example, 127.0.0.0/8")
        .args(["-p", "x"])
        .assert()
        .success()
        .stdout(contains("direct"));
    assert_eq!(proxy.seen(), Vec::<String>::new());
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn all_proxy_takes_a_socks5_proxy() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let proxy = Proxy::start();
    server.push(Reply::sse(openai_sse("by socks", &[])));
    sb.brute(&server)
        .env("ALL_PROXY", format!("socks5://127.0.0.1:{}", proxy.port))
        .args(["-p", "x"])
        .assert()
        .success()
        .stdout(contains("by socks"));
    // Every connection went through it (the conversation's, and the window reports').
    let seen = proxy.seen();
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|s| *s == format!("SOCKS5 127.0.0.1:{}", server.port)),
        "{seen:?}"
    );
}

#[test]
fn ssl_cert_file_trusts_a_private_ca_and_without_it_the_error_names_the_problem() {
    let sb = Sandbox::new();
    let ca = TestCa::new();
    let ca_file = ca.write_ca(sb.home.path(), "ca.pem");
    let server = MockServer::start();
    let front = ca.front(server.port);
    let log = enable_log(&sb);
    server.push(Reply::sse(openai_sse("over tls", &[])));
    brute_at(&sb, &https(front, "/v1"))
        .env("SSL_CERT_FILE", &ca_file)
        .env("BRUTE_LOG", "brute=info")
        .assert()
        .success()
        .stdout(contains("over tls"));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains(&format!("TLS roots loaded from SSL_CERT_FILE={}", ca_file.display())),
        "{logged}"
    );

    // Without it the system's roots are used, and they do not know this CA.
    let refused = brute_at(&sb, &https(front, "/v1")).assert().failure();
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        stderr.contains(
            "invalid peer certificate: UnknownIssuer (the certificate's issuer is not among the trusted roots (the system store); for a private CA, set SSL_CERT_FILE or SSL_CERT_DIR"
        ),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 1, "nothing reached the server without trust");
}

#[test]
fn ssl_cert_dir_trusts_a_private_ca() {
    let sb = Sandbox::new();
    let ca = TestCa::new();
    let dir = sb.home.path().join("certs");
    std::fs::create_dir_all(&dir).unwrap();
    ca.write_ca(&dir, "test-ca.pem");
    let server = MockServer::start();
    let front = ca.front(server.port);
    server.push(Reply::sse(openai_sse("trusted by dir", &[])));
    brute_at(&sb, &https(front, "/v1"))
        .env("SSL_CERT_DIR", &dir)
        .assert()
        .success()
        .stdout(contains("trusted by dir"));
}

#[test]
fn https_proxy_tunnels_with_connect_and_the_certificate_is_still_checked() {
    let sb = Sandbox::new();
    let ca = TestCa::new();
    let ca_file = ca.write_ca(sb.home.path(), "ca.pem");
    let server = MockServer::start();
    let front = ca.front(server.port);
    let proxy = Proxy::start();
    server.push(Reply::sse(openai_sse("tunnelled", &[])));
    brute_at(&sb, &https(front, "/v1"))
        .env("https_proxy", proxy.url())
        .env("SSL_CERT_FILE", &ca_file)
        .assert()
        .success()
        .stdout(contains("tunnelled"));
    assert_eq!(proxy.seen(), [format!("CONNECT 127.0.0.1:{front}")]);

    // The proxy carries the bytes; it is no way around the server's certificate.
    let refused = brute_at(&sb, &https(front, "/v1"))
        .env("https_proxy", proxy.url())
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(stderr.contains("invalid peer certificate: UnknownIssuer"), "{stderr}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn fetch_of_an_https_page_trusts_the_same_roots() {
    let sb = Sandbox::new();
    let ca = TestCa::new();
    let ca_file = ca.write_ca(sb.home.path(), "ca.pem");
    let server = MockServer::start();
    let front = ca.front(server.port);
    let page = https(front, "/page");
    server.push(Reply::sse(openai_sse(
        "",
        &[("f", "fetch", &format!(r#"{{"url":"{page}"}}"#))],
    )));
    server.push(Reply::json(200, "secret docs").header("content-type", "text/plain"));
    server.push(Reply::sse(openai_sse("read it", &[])));
    sb.brute(&server)
        .env("SSL_CERT_FILE", &ca_file)
        .args(["-p", "x"])
        .assert()
        .success();
    let results = tool_results(&server.requests()[2]);
    assert!(
        results[0].1.starts_with(&format!("GET {page}\nStatus: 200 OK")) && results[0].1.ends_with("secret docs"),
        "{results:?}"
    );
}

#[test]
fn plain_http_loads_no_root_certificates() {
    let sb = Sandbox::new();
    let log = enable_log(&sb);
    let missing = sb.home.path().join("no-such-bundle.pem");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("no tls here", &[])));
    // A bundle that cannot be read would fail any loading of the roots; a plain-http run
    // never tries.
    sb.brute(&server)
        .env("SSL_CERT_FILE", &missing)
        .env("BRUTE_LOG", "brute=info")
        .args(["-p", "x"])
        .assert()
        .success()
        .stdout(contains("no tls here"));
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!logged.contains("TLS roots"), "{logged}");

    // The same setting is read as soon as https is used, and its problem is named.
    let ca = TestCa::new();
    let front = ca.front(server.port);
    let refused = brute_at(&sb, &https(front, "/v1"))
        .env("SSL_CERT_FILE", &missing)
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        stderr.contains(&format!(
            "no trusted root certificates could be loaded from SSL_CERT_FILE={} (failed to read PEM from file: No such file",
            missing.display()
        )),
        "{stderr}"
    );
}
