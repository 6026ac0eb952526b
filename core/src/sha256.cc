#include "axqc/sha256.h"

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

namespace axqc {

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
  bool done = false;
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (ctx_->md == nullptr || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("sha256: EVP_DigestInit_ex failed");
  }
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::Update(std::string_view bytes) {
  if (ctx_->done) throw std::logic_error("sha256: Update after HexDigest");
  if (!bytes.empty() && EVP_DigestUpdate(ctx_->md, bytes.data(), bytes.size()) != 1) {
    throw std::runtime_error("sha256: EVP_DigestUpdate failed");
  }
}

std::string Sha256::HexDigest() {
  if (ctx_->done) throw std::logic_error("sha256: HexDigest called twice");
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->md, digest.data(), &len) != 1) {
    throw std::runtime_error("sha256: EVP_DigestFinal_ex failed");
  }
  ctx_->done = true;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * static_cast<std::size_t>(len));
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xf]);
  }
  return out;
}

std::string Sha256Hex(std::string_view bytes) {
  Sha256 h;
  h.Update(bytes);
  return h.HexDigest();
}

bool IsSha256Hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace axqc
