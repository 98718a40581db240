// The LineStream behind Client::stream(): the body of an Exchange read on demand, split into
// lines by a LineSplitter, on the client's strand.
//
// Threading: make_line_stream() runs on the client's strand; the LineStream it returns follows
// line_stream.h's contract.
#pragma once

#include <memory>
#include <string>

#include "http/internal/client_state.h"
#include "http/internal/exchange.h"
#include "http/line_stream.h"

namespace nmo::http::internal {

// A LineStream reading the body of `exchange` (whose headers have arrived). `label` names the
// request in errors ("GET /api/v1/pods?watch=1 on 127.0.0.1:6443").
[[nodiscard]] std::unique_ptr<LineStream> make_line_stream(std::shared_ptr<ClientState> state,
                                                           Exchange exchange, std::string label);

}  // namespace nmo::http::internal
