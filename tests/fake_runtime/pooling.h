// llama-server started as a pooling server (--embedding, --reranking): which
// routes it refuses. Upstream (tools/server/server-context.cpp) answers
// /v1/embeddings only with --embedding(s) and /v1/rerank only with
// --reranking, each refusal HTTP 501 not_supported_error ("This server does
// not support embeddings. Start it with `--embeddings`"). The fake also
// refuses chat completions in a pooling mode (upstream has no explicit check
// there; a pooling model cannot generate): a stray chat request then shows as
// a failure, and in the route log (ListenerStats::routes).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace soak::fake {

inline constexpr std::string_view kPoolingEmbedding = "embedding";
inline constexpr std::string_view kPoolingRerank = "rerank";

// The refusal message for `method path` in pooling mode `pooling` ("" = a chat
// server: nothing refused here), or nullopt when the route is served.
std::optional<std::string> pooling_refusal(std::string_view pooling, std::string_view method, std::string_view path);

}  // namespace soak::fake
