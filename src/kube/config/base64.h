// Base64 (RFC 4648 section 4, standard alphabet) for the `*-data` fields of a kubeconfig.
//
// kubectl reads those fields with Go's encoding/json, which decodes []byte with
// base64.StdEncoding: '=' padding is required and CR/LF anywhere are skipped (so data folded over
// several lines still decodes). We accept exactly that, and additionally reject non-canonical
// encodings (set bits after the last whole byte, such as "QR=="), which no encoder produces and
// which would otherwise give two spellings of the same bytes.
//
// Threading: pure functions without shared state; safe to call from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace nmo::kube {

// The bytes `text` encodes, or std::nullopt when `text` is not canonical, padded standard base64
// (after skipping '\r' and '\n'). The empty string decodes to the empty string.
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);

// `bytes` as padded standard base64 without line breaks; base64_decode() inverts it.
[[nodiscard]] std::string base64_encode(std::string_view bytes);

}  // namespace nmo::kube
