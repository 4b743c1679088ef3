// Filesystem helpers with the permissions soakd promises: directories it
// creates are 0700 (only the ones it creates; existing ones are left alone).
#pragma once

#include <optional>
#include <string>

#include "core/result.h"

namespace soak {

Status make_parent_dirs_private(const std::string& file_path);

// Replaces `path` with `content` so that a reader sees the old file or the new
// one, never a part: written to a temporary file in the same directory, synced,
// then renamed over `path`. The file is created with `mode` (before umask).
// Errors name the file and the call that failed.
Status write_file_atomic(const std::string& path, const std::string& content, unsigned mode);

// The whole of `path`, read with plain open/read (EINTR retried); nullopt
// when it cannot be opened or read. Never throws: another process's /proc
// files vanish while they are read when it ends (ENOENT, ESRCH), and that
// reads as absent, the way a caller treats a process that is gone.
std::optional<std::string> read_file_whole(const std::string& path);

}  // namespace soak
