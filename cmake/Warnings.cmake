# Compiler warnings for project targets.
#
# nmo_target_warnings(<target>) adds the flags PRIVATE to one of our targets. Third-party headers
# come in through imported targets (-isystem), so these flags, and -Werror, never fire on them.
include_guard(GLOBAL)

set(NMO_WARNING_FLAGS
  -Wall
  -Wextra
  -Wpedantic
  -Wshadow
  -Wconversion
  -Wsign-conversion
  -Wnon-virtual-dtor
  -Wold-style-cast
  -Woverloaded-virtual
  -Wcast-qual
  -Wformat=2
  -Wimplicit-fallthrough
  # GCC 12 reports -Wmissing-field-initializers for C++20 designated initializers that leave
  # members to their defaults (`Options{.page_size = 500}`), which is the idiom we want for option
  # structs. Clang 14 does not, and still checks positional aggregate initialisation for us.
  $<$<CXX_COMPILER_ID:GNU>:-Wno-missing-field-initializers>
)

if(NMO_WERROR)
  list(APPEND NMO_WARNING_FLAGS -Werror)
endif()

function(nmo_target_warnings target)
  target_compile_options(${target} PRIVATE ${NMO_WARNING_FLAGS})
endfunction()
