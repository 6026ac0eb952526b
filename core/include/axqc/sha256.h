// SHA-256 (OpenSSL EVP) with lowercase hex output: the one implementation of the project, used
// for the model hash of every report, finding fingerprints, SARIF/GitLab identifiers, and by the
// server and the remote client (uploads, cache keys).
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace axqc {

// Streaming digest: Update any number of times, then HexDigest once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  void Update(std::string_view bytes);
  // Lowercase hex digest (64 characters). Ends the computation; Update after it throws.
  std::string HexDigest();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

// sha256 of `bytes` as lowercase hex.
std::string Sha256Hex(std::string_view bytes);

// True when `s` is 64 lowercase hex characters.
bool IsSha256Hex(std::string_view s);

}  // namespace axqc
