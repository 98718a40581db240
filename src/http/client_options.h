// How an http::Client reaches its server: address, TLS material (in-memory PEM, as kubeconfig
// `*-data` fields carry it), timeouts and keep-alive pool limits. Validated by Client::create().
//
// Threading: plain value types.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace nmo::http {

// TLS settings. All certificates and keys are PEM text held in memory; nothing is written to disk.
struct TlsOptions {
  // CA bundle (one or more PEM certificates) that must sign the server certificate. Empty: the
  // system trust store. When set, only these CAs are trusted (client-go does the same).
  std::string ca_pem;
  // Client certificate (PEM, optionally followed by its intermediates) and its unencrypted private
  // key, for mutual TLS (kubeconfig client-certificate-data / client-key-data). Both or neither.
  std::string client_cert_pem;
  std::string client_key_pem;
  // Accept any server certificate (kubeconfig insecure-skip-tls-verify). For tests and
  // development clusters only.
  bool insecure_skip_verify = false;
  // The name sent as SNI and matched against the server certificate instead of the host
  // (kubeconfig tls-server-name). Empty: the host.
  std::string server_name;
};

// Where and how to connect. One Client talks to one server (host:port).
struct ClientOptions {
  // DNS name or IP literal; IPv6 without brackets ("::1").
  std::string host;
  // Port number as text ("443", "6443").
  std::string port = "443";
  // false: plain HTTP (tests, metrics scraping on loopback).
  bool tls = true;
  TlsOptions tls_options;
  // TCP connect plus TLS handshake. DNS resolution is not included: it runs on the system
  // resolver, whose own timeouts (resolv.conf) bound it.
  std::chrono::milliseconds connect_timeout{10'000};
  // The whole of one send() (connect, write, read the complete response), and the time
  // stream() may take until the response headers arrive. Request::timeout overrides it.
  std::chrono::milliseconds request_timeout{60'000};
  // How many idle keep-alive connections are kept for reuse; 0 disables reuse.
  std::size_t max_idle_connections = 16;
  // An idle pooled connection older than this is closed instead of reused (Go's
  // http.Transport default IdleConnTimeout is 90 s).
  std::chrono::milliseconds idle_connection_timeout{90'000};
  // The largest response body send() (or a LineStream's read_rest()) accepts; beyond it the
  // call fails with kInvalid. A page of 500 pods is a few MB (lists are paginated: kube
  // ListOptions::limit); 64 MiB only stops a runaway server, well inside the operator pod's
  // 256Mi memory limit (deploy/), where the body is held more than once while it is decoded.
  std::size_t max_body_bytes = std::size_t{64} << 20U;
  // The longest single line a LineStream accepts (a watch event carries one object, which etcd
  // limits to 1.5 MiB by default); beyond it next_line() fails with kInvalid.
  std::size_t max_line_bytes = std::size_t{16} << 20U;
};

}  // namespace nmo::http
