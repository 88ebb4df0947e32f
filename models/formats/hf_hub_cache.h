// Model paths as users write them: a Hugging Face model id ("meta-llama/Llama-3.2-3B-Instruct")
// names the snapshot that the huggingface_hub library downloaded into its local cache.
//
// Cache layout (huggingface_hub's file-system cache):
//   <hub>/models--<org>--<name>/refs/main          the commit hash of the "main" revision
//   <hub>/models--<org>--<name>/snapshots/<hash>/  that revision's files (links into blobs/)
// <hub> is looked for in order: $HF_HUB_CACHE, $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub,
// ~/.cache/huggingface/hub (the first that holds the model wins). speclab never downloads.
#pragma once

#include <string>
#include <vector>

namespace speclab {

// True for strings shaped like "org/name": exactly one '/', both parts non-empty, of
// [A-Za-z0-9._-], neither starting with '.' or '-'. (Not "./x", "/abs/path", "a/b/c".)
bool hf_model_id_like(const std::string& text);

// The hub cache folders to search, in order, from the environment (some may not exist).
std::vector<std::string> hf_hub_cache_dirs();

// `path` unchanged when it exists on disk, is synthetic:..., or is not shaped like a model id;
// otherwise the snapshot directory of the id's refs/main in the first cache that has it.
// InputError when the id is in no cache: one line naming the folders searched and saying
// that speclab does not download.
std::string hf_resolve_model_path(const std::string& path);

}  // namespace speclab
