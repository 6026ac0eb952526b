#include "store.h"

#include "pg_store.h"
#include "sqlite_store.h"

namespace axqc::server {

bool IsPostgresLocation(const std::string& location) {
  return location.rfind("postgresql://", 0) == 0 || location.rfind("postgres://", 0) == 0;
}

std::unique_ptr<ReportStore> OpenStore(const std::string& location, const StoreOptions& options) {
  if (IsPostgresLocation(location)) return std::make_unique<PgStore>(location, options);
  std::string path = location;
  if (path.rfind("sqlite:", 0) == 0) path = path.substr(7);
  if (path.find("://") != std::string::npos) {
    throw StoreError("unsupported store location '" + RedactConnectionString(location) +
                     "' (use a SQLite file path, or a postgresql:// URI)");
  }
  if (path.empty()) throw StoreError("empty store path");
  return std::make_unique<SqliteStore>(path);
}

}  // namespace axqc::server
