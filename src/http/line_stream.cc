#include "http/line_stream.h"

namespace nmo::http {

LineStream::~LineStream() = default;

}  // namespace nmo::http
