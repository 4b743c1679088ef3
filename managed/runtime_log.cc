#include "managed/runtime_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "core/files.h"

namespace soak {

namespace fs = std::filesystem;

namespace {

// The last `max_bytes` of a file ("" when it cannot be read).
std::string read_end(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff size = in.tellg();
  const std::streamoff from =
      size > static_cast<std::streamoff>(max_bytes) ? size - static_cast<std::streamoff>(max_bytes) : 0;
  in.seekg(from);
  std::string out(static_cast<size_t>(size - from), '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

}  // namespace

std::string RuntimeLog::path_for(const std::string& soakd_log_path, const std::string& candidate) {
  fs::path dir = fs::path(soakd_log_path).parent_path();
  return (dir / (candidate + ".runtime.log")).string();
}

RuntimeLog::RuntimeLog(std::string path, int64_t cap_bytes) : path_(std::move(path)), cap_(cap_bytes) {}

void RuntimeLog::mark(const std::string& line) {
  if (!make_parent_dirs_private(path_)) return;
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string text = line + "\n";
  ssize_t ignored = ::write(fd, text.data(), text.size());
  (void)ignored;  // a lost marker line costs nothing
  ::close(fd);
}

Result<int> RuntimeLog::open_for_child() {
  if (auto st = make_parent_dirs_private(path_); !st) return st.error();
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return make_error("cannot open the runtime log " + path_ + ": " + std::strerror(errno));
  return fd;
}

bool RuntimeLog::enforce_cap() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0 || st.st_size <= cap_) return false;
  std::error_code ec;
  fs::copy_file(path_, path_ + ".1", fs::copy_options::overwrite_existing, ec);
  if (ec) return false;
  // The runtime appends (O_APPEND), so after the truncation its next write
  // lands at the start of the file.
  return ::truncate(path_.c_str(), 0) == 0;
}

std::string RuntimeLog::tail(size_t max_lines, size_t max_bytes) const {
  std::string text = read_end(path_, max_bytes);
  if (text.size() < max_bytes) text = read_end(path_ + ".1", max_bytes - text.size()) + text;
  // Whole lines only: drop a partial first line when the text was cut.
  size_t lines = 0;
  size_t pos = text.size();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  pos = text.size();
  while (pos > 0) {
    size_t nl = text.rfind('\n', pos - 1);
    ++lines;
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    if (lines == max_lines) {
      pos = nl + 1;
      break;
    }
    pos = nl;
  }
  return text.substr(pos);
}

}  // namespace soak
