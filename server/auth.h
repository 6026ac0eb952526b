// Authentication of axqc-server: TLS server credentials (optionally requiring client
// certificates: mutual TLS) and the bearer token of the axqc.v1 service. The health service and
// reflection never need the token (probes stay simple); with mutual TLS every connection needs a
// client certificate, probes included.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>
#include <string_view>

#include "config.h"

namespace axqc::server {

// Insecure credentials when no TLS file is configured; TLS with tls_cert_file + tls_key_file
// otherwise; with tls_client_ca_file, clients must present a certificate signed by one of its CAs.
// Throws std::runtime_error when a file cannot be read or the combination is incomplete.
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const ServerConfig& config);

// True when TLS is configured.
bool TlsEnabled(const ServerConfig& config);

// The token in `path` without trailing whitespace. Throws std::runtime_error when the file cannot
// be read or holds no token.
std::string ReadTokenFile(const std::string& path);

// Whether the "authorization" metadata value is "Bearer <token>". Constant time in the contents
// (both sides are hashed first, so not even the length leaks through timing).
bool BearerTokenMatches(std::string_view authorization, std::string_view token);

}  // namespace axqc::server
