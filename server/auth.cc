#include "auth.h"

#include <grpcpp/security/server_credentials.h>
#include <openssl/crypto.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "axqc/sha256.h"

namespace axqc::server {

namespace {

std::string ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("tls: cannot read " + std::string(what) + " " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  std::string pem = buf.str();
  if (pem.find("-----BEGIN") == std::string::npos) {
    throw std::runtime_error("tls: " + std::string(what) + " " + path + " is not PEM");
  }
  return pem;
}

}  // namespace

bool TlsEnabled(const ServerConfig& config) {
  return !config.tls_cert_file.empty() || !config.tls_key_file.empty() ||
         !config.tls_client_ca_file.empty();
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const ServerConfig& config) {
  if (!TlsEnabled(config)) return grpc::InsecureServerCredentials();
  if (config.tls_cert_file.empty() || config.tls_key_file.empty()) {
    throw std::runtime_error(
        "tls: tls-cert-file and tls-key-file must be set together"
        " (tls-client-ca-file needs both)");
  }
  grpc::SslServerCredentialsOptions options(
      config.tls_client_ca_file.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  pair.private_key = ReadPem(config.tls_key_file, "key file");
  pair.cert_chain = ReadPem(config.tls_cert_file, "certificate file");
  options.pem_key_cert_pairs.push_back(std::move(pair));
  if (!config.tls_client_ca_file.empty()) {
    options.pem_root_certs = ReadPem(config.tls_client_ca_file, "client CA file");
  }
  return grpc::SslServerCredentials(options);
}

std::string ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read auth token file " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  std::string token = buf.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ' ||
                            token.back() == '\t')) {
    token.pop_back();
  }
  if (token.empty()) throw std::runtime_error("auth token file " + path + " is empty");
  return token;
}

bool BearerTokenMatches(std::string_view authorization, std::string_view token) {
  const std::string expected = "Bearer " + std::string(token);
  // Compare digests of equal length in constant time: neither the token's length nor its
  // first differing byte shows in the time taken.
  const std::string a = Sha256Hex(authorization);
  const std::string b = Sha256Hex(expected);
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace axqc::server
