# Writes the source revision of the build into a generated C++ source, at *build* time.
#
#   cmake -DSOURCE_DIR=<checkout> -DOUTPUT=<file.cpp> -P cmake/git_revision.cmake
#
# The revision is `git rev-parse --short HEAD`, with "-dirty" appended when tracked files
# differ from HEAD (`git status --porcelain --untracked-files=no` is non-empty), and
# "unknown" without git or outside a checkout. OUTPUT is rewritten only when its text
# changes, so an unchanged revision recompiles nothing (the build runs this every time).

if(NOT SOURCE_DIR OR NOT OUTPUT)
  message(FATAL_ERROR "git_revision.cmake: pass -DSOURCE_DIR=... -DOUTPUT=...")
endif()

set(revision unknown)
find_program(TILEPATH_GIT git)
# Only the checkout that is SOURCE_DIR counts: a source tarball unpacked inside some
# other repository must not take that repository's revision.
if(TILEPATH_GIT AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${TILEPATH_GIT}" rev-parse --short HEAD
                  WORKING_DIRECTORY "${SOURCE_DIR}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE hash ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc EQUAL 0 AND hash MATCHES "^[0-9a-f]+$")
    set(revision "${hash}")
    # --no-optional-locks: do not refresh (lock and rewrite) the index from inside a
    # build while someone else may be running git in the same checkout.
    execute_process(COMMAND "${TILEPATH_GIT}" --no-optional-locks status --porcelain --untracked-files=no
                    WORKING_DIRECTORY "${SOURCE_DIR}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE changes ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
      message(WARNING "git_revision.cmake: `git status` failed in ${SOURCE_DIR}; recording ${revision} without a dirty check")
    elseif(NOT changes STREQUAL "")
      string(APPEND revision "-dirty")
    endif()
  endif()
endif()

set(text "// Generated at build time by cmake/git_revision.cmake; do not edit.
#include \"core/git_revision.h\"

namespace tilepath {
const char* build_git_revision() { return \"${revision}\"; }
}  // namespace tilepath
")

set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
  message(STATUS "tilepath: git revision ${revision}")
endif()
