#include "tests/fake_runtime/pooling.h"

namespace soak::fake {
namespace {

bool is_embeddings(std::string_view p) { return p == "/v1/embeddings" || p == "/embeddings" || p == "/embedding"; }
bool is_rerank(std::string_view p) {
  return p == "/v1/rerank" || p == "/rerank" || p == "/v1/reranking" || p == "/reranking";
}
bool is_generation(std::string_view p) {
  return p == "/v1/chat/completions" || p == "/chat/completions" || p == "/v1/completions" || p == "/completions" ||
         p == "/completion";
}

}  // namespace

std::optional<std::string> pooling_refusal(std::string_view pooling, std::string_view method, std::string_view path) {
  if (pooling.empty() || method != "POST") return std::nullopt;
  const bool embedding = pooling == kPoolingEmbedding;
  if (is_generation(path))
    return "This server does not support completions: it was started for " + std::string(pooling) + " only";
  // Upstream's own messages (server-context.cpp, post_rerank / handle_embeddings_impl).
  if (embedding && is_rerank(path))
    return std::string("This server does not support reranking. Start it with `--reranking`");
  if (!embedding && is_embeddings(path))
    return std::string("This server does not support embeddings. Start it with `--embeddings`");
  return std::nullopt;
}

}  // namespace soak::fake
