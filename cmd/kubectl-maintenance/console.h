// Writing to the terminal: results on stdout, flushed at once (watch redraws in place), and the
// one-line errors on stderr.
//
// Threading: called from the command coroutine on the main thread.
#pragma once

#include <string>

#include "cli/api_error.h"

namespace nmo::cli {

// Prints "error: <message>" on stderr and returns the failure's exit status.
int report(const Failure& failure);

// Writes `text` to stdout and flushes it.
void print(const std::string& text);

}  // namespace nmo::cli
