# Run at every build (cmake -P): writes generated/hpctrain/core/version.hpp with
# the source revision of the tree being built ("-dirty" when it has uncommitted
# changes), touching the file only when its content changes. Checkpoints and
# --version report it. Inputs: SRC, IN, OUT, PROJECT_VERSION.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE HPCTRAIN_SOURCE_REVISION OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT HPCTRAIN_SOURCE_REVISION)
  set(HPCTRAIN_SOURCE_REVISION unknown)
else()
  execute_process(COMMAND git diff --quiet HEAD -- WORKING_DIRECTORY ${SRC} RESULT_VARIABLE dirty ERROR_QUIET)
  if(dirty)
    string(APPEND HPCTRAIN_SOURCE_REVISION "-dirty")
  endif()
endif()
configure_file(${IN} ${OUT} @ONLY)
